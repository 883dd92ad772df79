// SPDX-License-Identifier: Apache-2.0
// The waiting loop of a lock that is acquired by trying again: try, and while the lock is busy
// pause by the backoff, never past the deadline, then try once more at the deadline itself.
// Time and sleeping come from a Clock, so the loop's timing is unit-tested on a simulated one.
// Internal.
//
// Thread-safety: one call runs on its caller's thread; `attempt` and `pause` run there too.
#pragma once

#include <chrono>

#include "clock.hpp"
#include "dblock/backoff.hpp"
#include "observe.hpp"

namespace dblock::detail {

// Calls `attempt()` (which returns something testable, such as a std::optional) until its
// result is true or `timeout` has passed on `clock`; `forever` waits without a deadline.
// Between tries calls `pause(d)`, which waits at most `d` (it may return sooner, as when a
// release notification arrives). Returns the last result: the first true one, or the false
// result of the try made at the deadline.
template <class Attempt, class Pause>
auto retry_until(Clock& clock, std::chrono::milliseconds timeout, bool forever, Backoff& backoff,
                 Attempt&& attempt, Pause&& pause) -> decltype(attempt()) {
  const auto deadline = forever ? Clock::time_point::max() : clock.now() + timeout;
  for (;;) {
    count_attempt();  // for an observed acquisition (observe.hpp)
    auto result = attempt();
    if (result) return result;
    const auto now = clock.now();
    if (now >= deadline) return result;
    pause(forever ? backoff.next(std::chrono::milliseconds::max())
                  : backoff.next(std::chrono::ceil<std::chrono::milliseconds>(deadline - now)));
  }
}

}  // namespace dblock::detail
