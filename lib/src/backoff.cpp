// SPDX-License-Identifier: Apache-2.0
#include "dblock/backoff.hpp"

#include <algorithm>

namespace dblock {

Backoff::Backoff(BackoffPolicy policy) : policy_(policy), rng_(std::random_device{}()) {}

std::chrono::milliseconds Backoff::next(std::chrono::milliseconds remaining) {
  const std::chrono::milliseconds out = wait(policy_, attempt_, remaining, rng_);
  if (attempt_ < 62) ++attempt_;
  return out;
}

std::chrono::milliseconds Backoff::wait(const BackoffPolicy& policy, int attempt,
                                        std::chrono::milliseconds remaining, std::mt19937_64& rng) {
  using std::chrono::milliseconds;
  const auto cap_count = policy.max_delay.count();
  auto ceiling = policy.initial.count();
  for (int i = 0; i < attempt && ceiling < cap_count; ++i) ceiling *= 2;
  ceiling = std::clamp<std::int64_t>(ceiling, policy.min_sleep.count(), cap_count);
  std::uniform_int_distribution<std::int64_t> pick(policy.min_sleep.count(), ceiling);
  return std::max(milliseconds(0), std::min(milliseconds(pick(rng)), remaining));
}

}  // namespace dblock
