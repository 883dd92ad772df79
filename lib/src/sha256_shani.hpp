// SPDX-License-Identifier: Apache-2.0
// SHA-256's compression function on x86-64 processors with the SHA extensions (SHA-NI), about a
// tenth of the instructions of the portable one (sha256.cpp), which uses it when the processor
// has them. Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>

namespace dblock::detail {

// True when this build and processor can run compress_shani (x86-64 with SHA, SSSE3 and SSE4.1).
bool sha_extensions_available() noexcept;

// Folds one 64-byte block into `state` (a, b, ..., h); only where sha_extensions_available().
void compress_shani(std::array<std::uint32_t, 8>& state, const unsigned char* block) noexcept;

}  // namespace dblock::detail
