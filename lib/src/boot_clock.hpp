// SPDX-License-Identifier: Apache-2.0
// The clock leases are timed on: CLOCK_BOOTTIME, a monotonic clock that keeps counting while the
// machine is suspended. The database's clock runs on during a suspend, so a lease's TTL must
// too: a steady (CLOCK_MONOTONIC) clock stops, and a lease would still look held after a
// suspend longer than its TTL, while the database has long expired it. Internal.
//
// CLOCK_BOOTTIME is Linux's. Elsewhere (and in a build with -DDBLOCK_PORTABLE_FALLBACKS, which
// compiles the fallbacks on Linux to test them) this is CLOCK_MONOTONIC: whether that counts a
// suspend depends on the system (docs/platforms.md).
//
// Thread-safety: now() may be called from any thread.
#pragma once

#include <time.h>

#include <chrono>

namespace dblock::detail {

struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    timespec ts{};
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
#else
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
};

}  // namespace dblock::detail
