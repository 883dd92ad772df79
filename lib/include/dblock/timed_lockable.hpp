// SPDX-License-Identifier: Apache-2.0
/// @file
/// Makes any dblock strategy a C++ TimedLockable, so std::unique_lock, std::scoped_lock and
/// std::lock_guard work with a database lock:
///
/// @code
///   dblock::LockableKey nightly(locks, "cron:nightly-report");
///   std::unique_lock guard(nightly, std::chrono::seconds(5));   // try_lock_for
///   if (guard) run_report();
/// @endcode
///
/// lock() waits without a limit; unlock() releases (and throws dblock::Error only on faults,
/// like a failed release statement — std::unique_lock's destructor calls it, so faults there
/// terminate; call release() yourself when you need to handle them).
///
/// Thread-safety: like std::mutex ownership, one LockableKey is locked and unlocked by one owner at
/// a time. Give each thread (or async owner, via LockOptions::owner) its own LockableKey.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "dblock/error.hpp"
#include "dblock/lock.hpp"

namespace dblock {

class LockableKey {
 public:
  LockableKey(Lock& lock, std::string key, LockOptions options = {})
      : lock_(lock), key_(std::move(key)), options_(std::move(options)) {}

  void lock() {
    lease_ = lock_.acquire(key_, options_);
    if (!lease_) throw Error(ErrorCode::kOther, "lock(" + key_ + ") returned without the lock");
  }
  bool try_lock() { return (lease_ = lock_.try_acquire(key_, options_)).has_value(); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    // Saturate: a duration past a century means "no limit" (and must not overflow).
    constexpr std::chrono::hours kForever(24 * 365 * 100);
    auto ms = timeout >= kForever ? std::chrono::milliseconds::max()
                                  : std::chrono::ceil<std::chrono::milliseconds>(timeout);
    lease_ = lock_.acquire(key_, std::max(ms, std::chrono::milliseconds(0)), options_);
    return lease_.has_value();
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }
  void unlock() {
    if (!lease_) throw Error(ErrorCode::kInvalidArgument, "unlock(" + key_ + ") without the lock");
    Lease lease = std::move(*lease_);
    lease_.reset();
    lease.release();
  }

  /// The lease while locked (for its fencing token), else nullptr.
  const Lease* lease() const noexcept { return lease_ ? &*lease_ : nullptr; }

 private:
  Lock& lock_;
  std::string key_;
  LockOptions options_;
  std::optional<Lease> lease_;
};

}  // namespace dblock
