// SPDX-License-Identifier: Apache-2.0
// The waiting loop of the polling strategies, on a simulated clock: where the tries fall, that
// no pause runs past the deadline, and that the last try is made at the deadline itself.
#include "retry_until.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "fake_clock.hpp"

namespace dblock::detail {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

struct Tries {
  FakeClock clock;
  std::vector<Clock::time_point> at;
  int succeed_on = 0;  // 1-based; 0: never

  std::optional<int> attempt() {
    at.push_back(clock.now());
    if (static_cast<int>(at.size()) == succeed_on) return static_cast<int>(at.size());
    return std::nullopt;
  }
  std::optional<int> run(milliseconds timeout, bool forever, BackoffPolicy policy = {}) {
    Backoff backoff(policy);
    return retry_until(
        clock, timeout, forever, backoff, [&] { return attempt(); },
        [&](milliseconds pause) { clock.sleep_for(pause); });
  }
};

TEST(RetryUntil, TriesUntilTheDeadlineAndOnceMoreAtIt) {
  Tries tries;
  const auto start = tries.clock.now();
  EXPECT_EQ(tries.run(2s, false), std::nullopt);
  ASSERT_GE(tries.at.size(), 5u);  // pauses of at most 500 ms
  EXPECT_EQ(tries.at.front(), start);
  EXPECT_EQ(tries.at.back(), start + 2s) << "the last try is made at the deadline";
  const auto slept = tries.clock.slept();
  for (std::size_t i = 0; i < slept.size(); ++i) {
    if (i + 1 < slept.size()) {
      EXPECT_GE(slept[i], 5ms);  // the last may be cut to the time left
    }
    EXPECT_LE(slept[i], 500ms);
  }
  EXPECT_EQ(tries.clock.now(), start + 2s) << "no pause ran past the deadline";
}

TEST(RetryUntil, ATimeoutOfZeroTriesOnceWithoutPausing) {
  Tries tries;
  EXPECT_EQ(tries.run(0ms, false), std::nullopt);
  EXPECT_EQ(tries.at.size(), 1u);
  EXPECT_TRUE(tries.clock.slept().empty());
}

TEST(RetryUntil, ReturnsTheFirstSuccessWithoutAnotherPause) {
  Tries tries;
  tries.succeed_on = 4;
  EXPECT_EQ(tries.run(10s, false), 4);
  EXPECT_EQ(tries.at.size(), 4u);
  EXPECT_EQ(tries.clock.slept().size(), 3u);
}

TEST(RetryUntil, WaitingForeverKeepsTryingAtTheBackoffsPace) {
  Tries tries;
  tries.succeed_on = 1000;  // about 4 minutes of simulated waiting at 250 ms a pause
  const auto start = tries.clock.now();
  EXPECT_EQ(tries.run(milliseconds(-1), true), 1000);
  const auto slept = tries.clock.slept();
  ASSERT_EQ(slept.size(), 999u);
  for (auto pause : slept) EXPECT_LE(pause, 500ms);
  EXPECT_GT(tries.clock.now() - start, 60s) << "the backoff grew towards its 500 ms ceiling";
}

TEST(RetryUntil, ShortDeadlinesCutThePauseToTheTimeLeft) {
  Tries tries;
  const auto start = tries.clock.now();
  // A first pause of up to 100 ms against a 30 ms deadline.
  EXPECT_EQ(tries.run(30ms, false, BackoffPolicy{100ms, 500ms, 50ms}), std::nullopt);
  EXPECT_EQ(tries.at, (std::vector<Clock::time_point>{start, start + 30ms}));
  EXPECT_EQ(tries.clock.slept(), (std::vector<std::chrono::nanoseconds>{30ms}));
}

}  // namespace
}  // namespace dblock::detail
