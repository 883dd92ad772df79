// SPDX-License-Identifier: Apache-2.0
// The seam between dblock's timing logic and time itself: what time it is, and waiting for a
// time. The renewer, its watchdog, a lease's deadline and the acquire waits read the time and
// wait only through a Clock, so their logic can be driven by a simulated clock in tests (hours
// of renewals in milliseconds, no database, no sleeping) while the library runs on
// Clock::system(). Internal.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "boot_clock.hpp"

namespace dblock::detail {

class Clock {
 public:
  using time_point = BootClock::time_point;

  virtual ~Clock() = default;

  // BootClock and real waits.
  static Clock& system() noexcept;

  virtual time_point now() const noexcept = 0;
  // Blocks, with `lock` held on entry and on return, until `done()` is true or this clock
  // reaches `deadline`, whichever comes first; `cv` is the condition variable that is notified
  // (under `lock`'s mutex) when `done()` may have become true. May return early: callers
  // re-read the time and their state after each wait.
  virtual void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          time_point deadline, const std::function<bool()>& done) = 0;
  virtual void sleep_for(std::chrono::nanoseconds duration) = 0;
};

}  // namespace dblock::detail
