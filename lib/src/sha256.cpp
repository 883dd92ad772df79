// SPDX-License-Identifier: Apache-2.0
#include "sha256.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "sha256_rounds.hpp"
#include "sha256_shani.hpp"

namespace dblock::detail {

namespace {

// SHA-256 as FIPS 180-4 defines it, computed here rather than by libcrypto: a session lock hashes
// its key on every acquire, and libcrypto's EVP interface allocates and frees a provider context
// for each digest, which cost several times the hash of a short key (about a sixth of a session
// lock's client CPU). Where the processor has the SHA extensions, blocks are folded by them
// (sha256_shani.cpp): a short key's hash then costs about a fifth of the instructions.

// The first 32 bits of the fractional parts of the square roots of the first 8 primes.
constexpr std::array<std::uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

std::uint32_t load_big_endian(const unsigned char* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// Folds one 64-byte block into `state`, on any processor.
void compress_portable(std::array<std::uint32_t, 8>& state, const unsigned char* block) noexcept {
  std::array<std::uint32_t, 64> w;
  for (int i = 0; i < 16; ++i) w[i] = load_big_endian(block + 4 * i);
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = std::rotr(w[i - 15], 7) ^ std::rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = std::rotr(w[i - 2], 17) ^ std::rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto [a, b, c, d, e, f, g, h] = state;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t t1 = h + (std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25)) +
                             ((e & f) ^ (~e & g)) + kSha256Round[i] + w[i];
    const std::uint32_t t2 =
        (std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  const std::array<std::uint32_t, 8> added = {a, b, c, d, e, f, g, h};
  for (int i = 0; i < 8; ++i) state[i] += added[i];
}

using Compress = void (*)(std::array<std::uint32_t, 8>&, const unsigned char*) noexcept;

Sha256Digest hash(std::string_view data, Compress compress) {
  std::array<std::uint32_t, 8> state = kInitial;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t whole = data.size() / 64 * 64;
  for (std::size_t at = 0; at < whole; at += 64) compress(state, bytes + at);

  // The tail, a 1 bit, zeros, and the message length in bits (64-bit big-endian): one block, or
  // two when the tail leaves fewer than 9 bytes.
  unsigned char last[128] = {};
  const std::size_t tail = data.size() - whole;
  if (tail > 0) std::memcpy(last, bytes + whole, tail);
  last[tail] = 0x80;
  const std::size_t blocks = tail + 9 <= 64 ? 1 : 2;
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) {
    last[64 * blocks - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  }
  for (std::size_t i = 0; i < blocks; ++i) compress(state, last + 64 * i);

  Sha256Digest digest;
  for (int i = 0; i < 32; ++i) {
    digest[i] = static_cast<unsigned char>(state[i / 4] >> (24 - 8 * (i % 4)));
  }
  return digest;
}

}  // namespace

Sha256Digest sha256(std::string_view data) {
  static const Compress compress =
      sha_extensions_available() ? Compress{compress_shani} : Compress{compress_portable};
  return hash(data, compress);
}

std::string hex(std::span<const unsigned char> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * bytes.size(), '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0x0f];
  }
  return out;
}

std::string sha256_hex(std::string_view data) { return hex(sha256(data)); }

std::string sha256_hex_portable(std::string_view data) {
  return hex(hash(data, compress_portable));
}

}  // namespace dblock::detail
