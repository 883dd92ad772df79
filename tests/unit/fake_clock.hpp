// SPDX-License-Identifier: Apache-2.0
// A simulated Clock for unit tests of timing logic: time stands still until the test advances
// it, and sleeping advances it at once. Like real time, an advance wakes only the threads whose
// wait has reached its deadline (a thread that should have been notified and was not stays
// asleep, as it would in production). A test can wait until the threads waiting on the clock
// have settled (each has looked at the current time or waits past it) before checking what
// did not happen.
//
// Thread-safety: every member may be called from any thread. The mutexes and condition
// variables of the threads waiting on it must outlive the last advance().
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"

namespace dblock::detail {

class FakeClock final : public Clock {
 public:
  time_point now() const noexcept override {
    std::lock_guard lock(mu_);
    return now_;
  }

  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  time_point deadline, const std::function<bool()>& done) override {
    // Register, with the epoch of the time seen, before looking: an advance() after this
    // notifies `cv` under `lock`'s mutex, so it cannot slip in between the look and the wait.
    Waiter me{lock.mutex(), &cv, deadline, 0};
    for (;;) {
      {
        std::lock_guard guard(mu_);
        me.epoch = epoch_;
        waiters_.push_back(&me);
      }
      settled_.notify_all();
      const bool over = done() || now() >= deadline;
      if (!over) cv.wait(lock);
      {
        std::lock_guard guard(mu_);
        waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &me));
      }
      if (over) return;
    }
  }

  void sleep_for(std::chrono::nanoseconds duration) override {
    {
      std::lock_guard lock(mu_);
      slept_.push_back(duration);
    }
    advance(duration);
  }

  // Moves time forward and wakes the threads whose wait has reached its deadline.
  void advance(std::chrono::nanoseconds by) {
    std::vector<std::pair<std::mutex*, std::condition_variable*>> wake;
    {
      std::lock_guard lock(mu_);
      now_ += by;
      ++epoch_;
      for (Waiter* w : waiters_) {
        if (w->deadline <= now_) wake.emplace_back(w->mutex, w->cv);
      }
    }
    for (auto [mutex, cv] : wake) {
      std::lock_guard lock(*mutex);
      cv->notify_all();
    }
  }

  // Waits (up to `patience` of real time) until `threads` threads wait on the clock, each having
  // seen its current time or waiting for a later one; false if they did not.
  bool settled(std::size_t threads,
               std::chrono::milliseconds patience = std::chrono::seconds(10)) const {
    std::unique_lock lock(mu_);
    return settled_.wait_for(lock, patience, [&] {
      return static_cast<std::size_t>(
                 std::count_if(waiters_.begin(), waiters_.end(), [&](const Waiter* w) {
                   return w->epoch == epoch_ || w->deadline > now_;
                 })) >= threads;
    });
  }

  // What sleep_for() was asked for, in order.
  std::vector<std::chrono::nanoseconds> slept() const {
    std::lock_guard lock(mu_);
    return slept_;
  }

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    time_point deadline;
    std::uint64_t epoch;  // of the time it saw
  };

  mutable std::mutex mu_;
  mutable std::condition_variable settled_;
  // Starts far from zero, as a boot clock does: nothing may read zero as "unset".
  time_point now_ = time_point(std::chrono::hours(1000));
  std::uint64_t epoch_ = 0;
  std::vector<Waiter*> waiters_;
  std::vector<std::chrono::nanoseconds> slept_;
};

}  // namespace dblock::detail
