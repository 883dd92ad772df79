#include "sha256.hpp"

#include <openssl/evp.h>

#include "dblock/error.hpp"

namespace dblock::detail {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
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
