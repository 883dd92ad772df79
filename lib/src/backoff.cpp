// SPDX-License-Identifier: Apache-2.0
#include "dblock/backoff.hpp"

#include <algorithm>

namespace dblock {

Backoff::Backoff(BackoffPolicy policy) : policy_(policy), rng_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::next(std::chrono::milliseconds remaining) {
  using std::chrono::milliseconds;
  const auto cap_count = policy_.max_delay.count();
  auto ceiling = policy_.initial.count();
  for (int i = 0; i < attempt_ && ceiling < cap_count; ++i) ceiling *= 2;
  ceiling = std::clamp<std::int64_t>(ceiling, policy_.min_sleep.count(), cap_count);
  if (attempt_ < 62) ++attempt_;
  std::uniform_int_distribution<std::int64_t> pick(policy_.min_sleep.count(), ceiling);
  return std::max(milliseconds(0), std::min(milliseconds(pick(rng_)), remaining));
}

}  // namespace dblock
