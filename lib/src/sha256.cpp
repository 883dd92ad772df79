#include "sha256.hpp"

#include <openssl/evp.h>

#include <memory>

#include "dblock/error.hpp"

namespace dblock::detail {

namespace {

// Fetched once: EVP_sha256() makes every digest look the algorithm up in libcrypto's provider
// tables again, which cost more than hashing a short key. Never freed; null when no provider
// offers SHA-256, and sha256_hex then throws.
const EVP_MD* sha256_md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

struct ContextFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

}  // namespace

std::string sha256_hex(std::string_view data) {
  // One digest context per thread, set up again for each hash: a session lock hashes its key on
  // every acquire, and a new context costs two allocations and a provider call.
  thread_local const std::unique_ptr<EVP_MD_CTX, ContextFree> ctx(EVP_MD_CTX_new());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const EVP_MD* md = sha256_md();
  if (md == nullptr || !ctx || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) {
    throw Error(ErrorCode::kOther,
                "libcrypto could not compute a SHA-256 (is its default "
                "provider disabled by an OpenSSL configuration?)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

}  // namespace dblock::detail
