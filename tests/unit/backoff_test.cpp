// SPDX-License-Identifier: Apache-2.0
#include "dblock/backoff.hpp"

#include <gtest/gtest.h>

namespace dblock {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, GrowsWithinBoundsAndNeverPassesTheTimeLeft) {
  Backoff b(BackoffPolicy{milliseconds(10), milliseconds(500), milliseconds(5)});
  milliseconds max_seen{0};
  for (int i = 0; i < 200; ++i) {
    auto d = b.next(milliseconds::max());
    EXPECT_GE(d, milliseconds(5));
    EXPECT_LE(d, milliseconds(500));
    max_seen = std::max(max_seen, d);
  }
  EXPECT_GT(max_seen, milliseconds(250));  // the ceiling grew to max_delay
  EXPECT_EQ(b.next(milliseconds(3)), milliseconds(3));
  EXPECT_EQ(b.next(milliseconds(0)), milliseconds(0));
}

TEST(Backoff, FirstWaitsStayNearTheInitialDelay) {
  for (int run = 0; run < 50; ++run) {
    Backoff b(BackoffPolicy{milliseconds(10), milliseconds(500), milliseconds(1)});
    EXPECT_LE(b.next(milliseconds::max()), milliseconds(10));
    EXPECT_LE(b.next(milliseconds::max()), milliseconds(20));
    b.reset();
    EXPECT_LE(b.next(milliseconds::max()), milliseconds(10));
  }
}

// The static draw an AsyncLock uses for its many waits: the n-th wait's bounds, as next()'s.
TEST(Backoff, AWaitByAttemptHasTheBoundsOfThatAttempt) {
  const BackoffPolicy policy{milliseconds(10), milliseconds(500), milliseconds(5)};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    EXPECT_LE(Backoff::wait(policy, 0, milliseconds::max(), rng), milliseconds(10));
    EXPECT_LE(Backoff::wait(policy, 2, milliseconds::max(), rng), milliseconds(40));
    const milliseconds late = Backoff::wait(policy, 40, milliseconds::max(), rng);
    EXPECT_GE(late, milliseconds(5));
    EXPECT_LE(late, milliseconds(500));
  }
  EXPECT_EQ(Backoff::wait(policy, 3, milliseconds(2), rng), milliseconds(2));
}

}  // namespace
}  // namespace dblock
