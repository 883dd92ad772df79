// Small helpers shared by the lock strategies: random lease ids, TTL and wait validation.
// Internal.
//
// Thread-safety: safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace dblock::detail {

// 32 random hex digits.
std::string random_lease_id();

// Throws Error(kInvalidArgument) naming `what` unless 1 ms <= ttl <= 365 days.
void validate_ttl(std::chrono::milliseconds ttl, std::string_view what);

// Throws Error(kInvalidArgument) for a negative wait timeout. True when the wait is "forever":
// past a century, which would overflow the clock's arithmetic.
bool is_forever_wait(std::chrono::milliseconds timeout);

}  // namespace dblock::detail
