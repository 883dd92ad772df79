// SPDX-License-Identifier: Apache-2.0
// SHA-256 of a byte string, as 32 bytes or as 64 lower-case hex digits. Used for migration
// checksums and session-lock names. Internal.
//
// Thread-safety: a pure function.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace dblock::detail {

using Sha256Digest = std::array<unsigned char, 32>;

Sha256Digest sha256(std::string_view data);
std::string sha256_hex(std::string_view data);
// Lower-case hex digits, two per byte.
std::string hex(std::span<const unsigned char> bytes);

// The same computed without the processor's SHA extensions, for tests comparing the two.
std::string sha256_hex_portable(std::string_view data);

}  // namespace dblock::detail
