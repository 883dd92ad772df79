// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the lock strategies: random lease ids, TTL and wait validation, which
// errors are contention.
// Internal.
//
// Thread-safety: safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "dblock/error.hpp"

namespace dblock::detail {

// 32 random hex digits.
std::string random_lease_id();

// Throws Error(kInvalidArgument) naming `what` unless 1 ms <= ttl <= 365 days.
void validate_ttl(std::chrono::milliseconds ttl, std::string_view what);
// Throws Error(kInvalidArgument) unless 0 <= min_hold <= 365 days.
void validate_min_hold(std::chrono::milliseconds min_hold);
// Throws Error(kInvalidArgument) when a min_hold is set for `strategy`, which keeps no lease row
// that could stay taken after a release (row locks, optimistic, session locks).
void refuse_min_hold(std::chrono::milliseconds min_hold, std::string_view strategy);
// The most LockOptions::lock_delay accepts.
inline constexpr std::chrono::milliseconds kMaxLockDelay = std::chrono::hours(1);
// Throws Error(kInvalidArgument) unless 0 <= lock_delay <= kMaxLockDelay.
void validate_lock_delay(std::chrono::milliseconds lock_delay);
// Throws Error(kInvalidArgument) when a lock_delay is set for `strategy`, whose holds end with
// their transaction or session, so nothing could keep the key taken after one ends (row locks,
// optimistic, session locks).
void refuse_lock_delay(std::chrono::milliseconds lock_delay, std::string_view strategy);

// Throws Error(kInvalidArgument) unless 0 <= stop_margin < ttl (when one is set), or when a
// renew_if is set without auto_renew, which it would have nothing to gate.
void validate_stop_rules(std::optional<std::chrono::milliseconds> stop_margin,
                         std::chrono::milliseconds ttl, bool renew_if, bool auto_renew);
// Throws Error(kInvalidArgument) when a stop_margin or renew_if is set for `strategy`, whose
// leases do not expire (row locks, optimistic, session locks): no deadline to stop before, no
// renewal to gate.
void refuse_stop_rules(bool stop_margin, bool renew_if, std::string_view strategy);

// True for the errors a lock's autocommit write may meet when others write the same rows at once
// (deadlock, serialization failure, lock wait timeout, lock not available): worth a few retries.
bool is_write_contention(ErrorCode code) noexcept;
// Sleeps a random 0 to 2^(attempt+1) ms (at most 32 ms) before retrying after such an error,
// so that writers that collided do not collide again in step.
void pause_after_contention(int attempt);

// Throws Error(kInvalidArgument) for a negative wait timeout. True when the wait is "forever":
// past a century, which would overflow the clock's arithmetic.
bool is_forever_wait(std::chrono::milliseconds timeout);

}  // namespace dblock::detail
