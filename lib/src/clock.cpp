// SPDX-License-Identifier: Apache-2.0
#include "clock.hpp"

#include <algorithm>
#include <thread>

namespace dblock::detail {

namespace {

class SystemClock final : public Clock {
 public:
  time_point now() const noexcept override { return BootClock::now(); }

  // Condition variables wait on the steady clock, which stops during a suspend; the waits of
  // the renewer are short (at most a second) and it re-reads BootClock after each one.
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  time_point deadline, const std::function<bool()>& done) override {
    cv.wait_for(lock, std::max(BootClock::duration(0), deadline - now()), done);
  }

  void sleep_for(std::chrono::nanoseconds duration) override {
    std::this_thread::sleep_for(duration);
  }
};

}  // namespace

Clock& Clock::system() noexcept {
  static SystemClock clock;  // stateless: safe to use during static destruction too
  return clock;
}

}  // namespace dblock::detail
