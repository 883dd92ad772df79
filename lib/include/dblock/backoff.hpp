// SPDX-License-Identifier: Apache-2.0
/// @file
/// Exponential backoff with full jitter, for waiting on a lock held by someone else.
///
/// The n-th wait is a uniformly random time in [min_sleep, min(max_delay, initial * 2^n)], never
/// more than the time left. With the defaults one waiter sends at most 1 / min_sleep = 200
/// statements per second in the worst case, and about 4 per second once the delay has grown to
/// max_delay (mean wait 250 ms). On PostgreSQL a release also wakes waiters at once by
/// notification, so the backoff only bounds how often they re-check.
///
/// Thread-safety: a BackoffPolicy is a plain value; a Backoff is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

#include "dblock/export.hpp"

namespace dblock {

struct BackoffPolicy {
  std::chrono::milliseconds initial{10};
  std::chrono::milliseconds max_delay{500};
  std::chrono::milliseconds min_sleep{5};
};

class DBLOCK_EXPORT Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {});
  /// The next wait, at most `remaining`.
  std::chrono::milliseconds next(std::chrono::milliseconds remaining);
  void reset() noexcept { attempt_ = 0; }
  /// The wait after `attempt` earlier ones (0: the first), at most `remaining`, drawn from `rng`:
  /// what next() returns, for a caller that keeps many waits' attempt counts and one generator.
  static std::chrono::milliseconds wait(const BackoffPolicy& policy, int attempt,
                                        std::chrono::milliseconds remaining, std::mt19937_64& rng);

 private:
  BackoffPolicy policy_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace dblock
