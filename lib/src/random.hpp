// SPDX-License-Identifier: Apache-2.0
// Randomness a fork() does not copy. Ids that tell acquisitions, releases, waiters and processes
// apart come straight from the kernel (getrandom), never from a generator whose state a child
// inherits: two children of one parent would otherwise draw the same lease ids and pass for one
// holder. Jitter (pauses between retries, which slot to try) comes from a per-thread generator
// seeded from the kernel and seeded again in a forked child, so that twins do not collide in step.
// Internal.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace dblock::detail {

// Fills `out` with `size` bytes from the kernel's random source. Throws Error(kOther) only if the
// kernel refuses (no such system call).
void random_bytes(void* out, std::size_t size);

// `digits` random lowercase hex digits, from the kernel.
std::string random_hex(std::size_t digits);

// The calling thread's generator for jitter: seeded from the kernel on the thread's first call in
// each process (a forked child's threads get fresh seeds). Not for ids.
std::mt19937_64& jitter_generator();

}  // namespace dblock::detail
