// SPDX-License-Identifier: Apache-2.0
#include "strategy_rules.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "dblock/error.hpp"
#include "random.hpp"

namespace dblock::detail {

bool is_write_contention(ErrorCode code) noexcept {
  return code == ErrorCode::kDeadlock || code == ErrorCode::kSerializationFailure ||
         code == ErrorCode::kLockWaitTimeout || code == ErrorCode::kLockNotAvailable;
}

void pause_after_contention(int attempt) {
  std::uniform_int_distribution<int> pick(0, 2 << std::min(attempt, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(pick(jitter_generator())));
}

// From the kernel on every call: a generator's state would be copied by fork(), and a child's
// ids would repeat its parent's and its siblings' (two holders of one permit, one lease id).
std::string random_lease_id() { return random_hex(32); }

void validate_ttl(std::chrono::milliseconds ttl, std::string_view what) {
  constexpr auto kMax = std::chrono::hours(24 * 365);
  if (ttl < std::chrono::milliseconds(1) || ttl > kMax) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) +
                                                 " must be from 1 ms to 365 days; got " +
                                                 std::to_string(ttl.count()) + " ms");
  }
}

void validate_min_hold(std::chrono::milliseconds min_hold) {
  if (min_hold < std::chrono::milliseconds(0) || min_hold > std::chrono::hours(24 * 365)) {
    throw Error(ErrorCode::kInvalidArgument, "min_hold must be from 0 to 365 days; got " +
                                                 std::to_string(min_hold.count()) + " ms");
  }
}

void refuse_min_hold(std::chrono::milliseconds min_hold, std::string_view strategy) {
  if (min_hold.count() == 0) return;
  throw Error(ErrorCode::kInvalidArgument,
              std::string(strategy) +
                  " keep no lease row that could stay taken after a release, so min_hold "
                  "cannot apply; use a UniqueKeyLock (or a Semaphore) for jobs that must hold a "
                  "key for a least time");
}

void validate_lock_delay(std::chrono::milliseconds lock_delay) {
  if (lock_delay < std::chrono::milliseconds(0) || lock_delay > kMaxLockDelay) {
    throw Error(ErrorCode::kInvalidArgument,
                "lock_delay must be from 0 to 1 hour (3600000 ms); got " +
                    std::to_string(lock_delay.count()) +
                    " ms: it is how long a key stays taken after its holder vanished, on top of "
                    "the TTL");
  }
}

void validate_stop_rules(std::optional<std::chrono::milliseconds> stop_margin,
                         std::chrono::milliseconds ttl, bool renew_if, bool auto_renew) {
  if (stop_margin && (stop_margin->count() < 0 || *stop_margin >= ttl)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the stop margin is " + std::to_string(stop_margin->count()) + " ms and the TTL " +
                    std::to_string(ttl.count()) +
                    " ms; the margin must be at least 0 and shorter than the TTL (the stop "
                    "token is requested that long before the lease could expire)");
  }
  if (renew_if && !auto_renew) {
    throw Error(ErrorCode::kInvalidArgument,
                "renew_if decides whether the background renewer renews the lease, and "
                "auto_renew is off; set auto_renew, or drop renew_if and renew by hand");
  }
}

void refuse_stop_rules(bool stop_margin, bool renew_if, std::string_view strategy) {
  if (!stop_margin && !renew_if) return;
  throw Error(ErrorCode::kInvalidArgument,
              std::string(strategy) +
                  " hold their lock for as long as their transaction or "
                  "session lasts, with no TTL to stop before and no renewal "
                  "to gate, so " +
                  (stop_margin ? "stop_margin" : "renew_if") +
                  " cannot apply; leave it unset (the lease's stop token still follows its "
                  "loss and release), or use a UniqueKeyLock for a lease that expires");
}

void refuse_lock_delay(std::chrono::milliseconds lock_delay, std::string_view strategy) {
  if (lock_delay.count() == 0) return;
  throw Error(
      ErrorCode::kInvalidArgument,
      std::string(strategy) +
          " hold nothing past their transaction or session, which the server ends as "
          "soon as the holder is gone, so lock_delay cannot apply; use a UniqueKeyLock (or a "
          "Semaphore) for a key that must stay taken for a while after its holder "
          "vanished");
}

bool is_forever_wait(std::chrono::milliseconds timeout) {
  if (timeout < std::chrono::milliseconds(0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the wait timeout is negative; use 0 for a single try");
  }
  return timeout >= std::chrono::hours(24 * 365 * 100);
}

}  // namespace dblock::detail
