// SPDX-License-Identifier: Apache-2.0
#include "random.hpp"

#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dblock/error.hpp"

namespace dblock::detail {

void random_bytes(void* out, std::size_t size) {
  auto* p = static_cast<unsigned char*>(out);
  while (size > 0) {
#if defined(__linux__)
    const ssize_t got = ::getrandom(p, size, 0);
#else
    // getentropy (BSDs, macOS, glibc) hands out at most 256 bytes a call.
    const std::size_t chunk = std::min<std::size_t>(size, 256);
    const ssize_t got = ::getentropy(p, chunk) == 0 ? static_cast<ssize_t>(chunk) : -1;
#endif
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kOther,
                  std::string("the kernel's random source failed: ") + std::strerror(errno));
    }
    p += got;
    size -= static_cast<std::size_t>(got);
  }
}

std::string random_hex(std::size_t digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string bytes((digits + 1) / 2, '\0');
  random_bytes(bytes.data(), bytes.size());
  std::string out;
  out.reserve(digits);
  for (std::size_t i = 0; i < digits; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i / 2]);
    out += kHex[i % 2 == 0 ? b >> 4 : b & 15];
  }
  return out;
}

std::mt19937_64& jitter_generator() {
  thread_local pid_t seeded_in = 0;
  thread_local std::mt19937_64 generator;
  const pid_t pid = ::getpid();
  if (seeded_in != pid) {
    std::uint64_t seed = 0;
    random_bytes(&seed, sizeof seed);
    generator.seed(seed);
    seeded_in = pid;
  }
  return generator;
}

}  // namespace dblock::detail
