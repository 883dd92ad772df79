// SHA-256 of a byte string, as 64 lower-case hex digits. Used for migration checksums and
// session-lock names. Internal.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace dblock::detail {

std::string sha256_hex(std::string_view data);

}  // namespace dblock::detail
