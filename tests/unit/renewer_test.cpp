// SPDX-License-Identifier: Apache-2.0
// The renewer's and the watchdog's timing, on a simulated clock: when a lease is renewed, how a
// failing renewal is retried, when a lease counts as lost, and that a changed TTL or a short new
// lease is looked at in time. No database and no sleeping: time moves only when a test says.
#include "renewer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "fake_clock.hpp"

namespace dblock::detail {
namespace {

using namespace std::chrono_literals;
using TimePoint = Clock::time_point;

// Real time a test waits for something the renewer's threads do before it fails.
constexpr auto kPatience = 10s;

template <class Predicate>
bool eventually(Predicate done) {
  const auto give_up = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A lease whose renewals answer as the test says, recording when each was made.
class ScriptedLease final : public LeaseCore {
 public:
  enum class Answer { kHeld, kGone, kFail, kStuck };

  // `margin` and `renew_if` as LockOptions::stop_margin and renew_if; `expires` false makes a
  // lease like a session lock's: no TTL, its loss (`broken`) seen from any thread.
  ScriptedLease(std::chrono::milliseconds ttl, Clock& clock,
                std::optional<std::chrono::milliseconds> margin = {},
                std::function<bool()> renew_if = {}, bool expires = true)
      : LeaseCore(
            LeaseInfo{"job",
                      1,
                      "lease-1",
                      Owner::named("renewer-test"),
                      ttl,
                      {},
                      margin,
                      std::move(renew_if)},
            [this](const std::string&) {
              ++lost_calls;
              stopped_before_on_lost = stop_requested();
            },
            clock),
        clock_(clock),
        expires_(expires) {}

  std::atomic<Answer> answer{Answer::kHeld};
  std::atomic<int> lost_calls{0};
  std::atomic<bool> stopped_before_on_lost{false};
  std::atomic<bool> broken{false};

  bool expires() const noexcept override { return expires_; }
  bool polled_for_loss() const noexcept override { return !expires_; }

  std::vector<TimePoint> attempts() const {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  std::size_t attempt_count() const { return attempts().size(); }
  // Lets a renewal stuck by kStuck end (with an error, as a cut-off connection would).
  void unstick() {
    {
      std::lock_guard lock(mu_);
      unstuck_ = true;
    }
    unstuck_cv_.notify_all();
  }

 protected:
  ReleaseOutcome do_release() override { return ReleaseOutcome::kReleased; }
  bool connection_lost() const noexcept override { return broken.load(); }
  bool do_renew(std::chrono::milliseconds) override {
    std::unique_lock lock(mu_);
    attempts_.push_back(clock_.now());
    switch (answer.load()) {
      case Answer::kHeld:
        return true;
      case Answer::kGone:
        return false;
      case Answer::kFail:
        throw Error(ErrorCode::kConnectionLost, "scripted renewal failure");
      case Answer::kStuck:
        unstuck_cv_.wait(lock, [&] { return unstuck_; });
        throw Error(ErrorCode::kConnectionLost, "scripted renewal cut off");
    }
    return false;
  }

 private:
  Clock& clock_;
  const bool expires_;
  mutable std::mutex mu_;
  std::condition_variable unstuck_cv_;
  std::vector<TimePoint> attempts_;
  bool unstuck_ = false;
};

class RenewerTest : public testing::Test {
 protected:
  // The scheduler and the watchdog wait on the clock.
  static constexpr std::size_t kClockThreads = 2;

  template <class... Args>
  std::shared_ptr<ScriptedLease> watched_lease(std::chrono::milliseconds ttl, Args&&... args) {
    auto lease = new_lease(ttl, std::forward<Args>(args)...);
    renewer.watch(lease, clock.now());
    return lease;
  }
  template <class... Args>
  std::shared_ptr<ScriptedLease> new_lease(std::chrono::milliseconds ttl, Args&&... args) {
    auto lease = std::make_shared<ScriptedLease>(ttl, clock, std::forward<Args>(args)...);
    leases_.push_back(lease);
    return lease;
  }
  // Advances the clock to 1 ms before `at` and checks the lease's stop has not come, then to `at`
  // and waits for it.
  ::testing::AssertionResult stops_at(ScriptedLease& lease, TimePoint at) {
    clock.advance(at - std::chrono::milliseconds(1) - clock.now());
    if (!settled()) return ::testing::AssertionFailure() << "not settled";
    if (lease.stop_requested()) return ::testing::AssertionFailure() << "stopped before";
    clock.advance(std::chrono::milliseconds(1));
    if (!eventually([&] { return lease.stop_requested(); })) {
      return ::testing::AssertionFailure() << "not stopped at the time";
    }
    return ::testing::AssertionSuccess();
  }
  // What Lease::stop_token() does the first time.
  void arm(const std::shared_ptr<ScriptedLease>& lease) {
    ASSERT_TRUE(lease->arm());
    renewer.arm(lease);
  }
  // A test that failed may leave a renewal stuck; the renewer's destructor waits for it.
  void TearDown() override {
    for (auto& lease : leases_) lease->unstick();
  }
  // The renewer has done all it will do at the current time: both threads wait on the clock
  // and no renewal is running.
  ::testing::AssertionResult settled() {
    if (!clock.settled(kClockThreads)) return ::testing::AssertionFailure() << "not waiting";
    if (!eventually([&] { return renewer.in_flight() == 0; })) {
      return ::testing::AssertionFailure() << "a renewal is still running";
    }
    if (!clock.settled(kClockThreads)) return ::testing::AssertionFailure() << "not waiting";
    return ::testing::AssertionSuccess();
  }

  FakeClock clock;
  const TimePoint t0 = clock.now();
  Renewer renewer{clock};  // destroyed first: its threads stop before the clock goes

 private:
  std::vector<std::shared_ptr<ScriptedLease>> leases_;
};

TEST_F(RenewerTest, RenewsAtEachThirdOfTheTtlAndNotBefore) {
  auto lease = watched_lease(3s);
  ASSERT_TRUE(settled());
  clock.advance(999ms);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 0u);

  clock.advance(1ms);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 1; }));
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 2; }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempts(), (std::vector<TimePoint>{t0 + 1s, t0 + 2s}));
  EXPECT_FALSE(lease->lost());
  EXPECT_EQ(lease->lost_calls, 0);
}

TEST_F(RenewerTest, RetriesAFailingRenewalEveryQuarterSecondAndLosesTheLeaseAfterAWholeTtl) {
  auto lease = watched_lease(3s);
  lease->answer = ScriptedLease::Answer::kFail;
  ASSERT_TRUE(settled());
  std::vector<TimePoint> expected;
  for (auto at = t0 + 1s; at < t0 + 3s; at += 250ms) {
    clock.advance(at - clock.now());
    expected.push_back(at);
    ASSERT_TRUE(eventually([&] { return lease->attempt_count() == expected.size(); }));
    ASSERT_TRUE(settled());
    EXPECT_FALSE(lease->lost()) << "lost " << (at - t0).count() << " ns after the acquisition";
  }
  EXPECT_EQ(lease->attempts(), expected);
  EXPECT_EQ(lease->lost_calls, 0);

  clock.advance(t0 + 3s - clock.now());  // a whole TTL without a successful renewal
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  ASSERT_TRUE(settled());
  EXPECT_TRUE(lease->lost());
  EXPECT_EQ(lease->lost_calls, 1) << "on_lost is called once";

  const auto attempts = lease->attempt_count();
  clock.advance(2s);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), attempts) << "a lost lease is not renewed any more";
  EXPECT_EQ(renewer.watched(), 0u);
}

TEST_F(RenewerTest, TheWatchdogLosesALeaseWhoseRenewalIsStuckAtItsTtl) {
  auto lease = watched_lease(3s);
  lease->answer = ScriptedLease::Answer::kStuck;
  ASSERT_TRUE(settled());
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 1; }));
  clock.advance(1999ms);
  ASSERT_TRUE(clock.settled(kClockThreads));
  EXPECT_EQ(renewer.in_flight(), 1u);
  EXPECT_EQ(lease->lost_calls, 0);
  EXPECT_FALSE(lease->lost());

  clock.advance(1ms);  // a TTL after the acquisition, the renewal still stuck
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  EXPECT_TRUE(lease->lost());
  EXPECT_EQ(renewer.in_flight(), 1u) << "the watchdog did not wait for the stuck renewal";

  lease->unstick();
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->lost_calls, 1) << "on_lost is called once";
  EXPECT_EQ(lease->attempt_count(), 1u);
}

TEST_F(RenewerTest, ALeaseARenewalFindsGoneIsLostAndNotRenewedAgain) {
  auto lease = watched_lease(3s);
  lease->answer = ScriptedLease::Answer::kGone;
  ASSERT_TRUE(settled());
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  EXPECT_TRUE(lease->lost());
  clock.advance(3s);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 1u);
  EXPECT_EQ(lease->lost_calls, 1);
  EXPECT_EQ(renewer.watched(), 0u);
}

TEST_F(RenewerTest, AReleasedLeaseIsNeitherRenewedNorLost) {
  auto lease = watched_lease(3s);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  clock.advance(1s);
  ASSERT_TRUE(settled());
  clock.advance(5s);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 0u);
  EXPECT_EQ(lease->lost_calls, 0);
  EXPECT_FALSE(lease->lost());
  EXPECT_EQ(renewer.watched(), 0u);
}

// The scheduler sleeps up to a second between looks; a lease due sooner must wake it.
TEST_F(RenewerTest, AShortLeaseWatchedWhileTheThreadsSleepIsRenewedInTime) {
  auto long_lease = watched_lease(3s);
  ASSERT_TRUE(settled());
  auto short_lease = watched_lease(300ms);
  clock.advance(100ms);
  ASSERT_TRUE(eventually([&] { return short_lease->attempt_count() == 1; }));
  EXPECT_EQ(short_lease->attempts().front(), t0 + 100ms);
  ASSERT_TRUE(settled());
  EXPECT_EQ(long_lease->attempt_count(), 0u);
}

TEST_F(RenewerTest, ARenewalWithAShorterTtlIsFollowedOnceRescheduled) {
  auto lease = watched_lease(30s);
  ASSERT_TRUE(settled());
  ASSERT_TRUE(lease->renew(300ms));  // as Lease::renew(ttl) does, then reschedule
  renewer.reschedule();
  clock.advance(100ms);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 2; }));
  EXPECT_EQ(lease->attempts().back(), t0 + 100ms);
  // ... and the watchdog follows the shorter TTL too.
  lease->answer = ScriptedLease::Answer::kStuck;
  clock.advance(100ms);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 3; }));
  clock.advance(200ms);  // 300 ms after the last successful renewal
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  lease->unstick();
  ASSERT_TRUE(settled());
}

// Cancellation (Lease::stop_token): the stop comes a margin before the lease could expire, on
// loss, at release, and never while renewals succeed.

TEST_F(RenewerTest, AnArmedLeasesStopComesTheMarginBeforeItsTtlWhenRenewalsFailAndBeforeOnLost) {
  auto lease = watched_lease(3s);  // the default margin: a third of the TTL
  lease->answer = ScriptedLease::Answer::kFail;
  arm(lease);
  ASSERT_TRUE(stops_at(*lease, t0 + 2s));  // TTL - margin
  EXPECT_FALSE(lease->lost()) << "the stop comes before the loss, while the key is still ours";
  EXPECT_EQ(lease->lost_calls, 0);

  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  ASSERT_TRUE(settled());
}

TEST_F(RenewerTest, AnArmedLeaseRenewedOnTimeIsNotStopped) {
  auto lease = watched_lease(3s, 1900ms);  // stop due 100 ms after each next renewal is due
  arm(lease);
  for (int step = 0; step < 12; ++step) {
    clock.advance(500ms);
    ASSERT_TRUE(settled());
  }
  EXPECT_EQ(lease->attempt_count(), 6u);
  EXPECT_FALSE(lease->stop_requested());
  EXPECT_FALSE(lease->lost());
}

TEST_F(RenewerTest, ALeaseNotRenewedInTheBackgroundStopsAtItsMarginAndIsNotMarkedLost) {
  auto lease = new_lease(3s, 500ms);  // auto_renew off: armed, never watched
  arm(lease);
  EXPECT_EQ(renewer.watched(), 1u);
  ASSERT_TRUE(stops_at(*lease, t0 + 2500ms));
  clock.advance(2s);
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 0u) << "a lease without auto_renew is not renewed";
  EXPECT_EQ(lease->lost_calls, 0) << "on_lost belongs to the background renewer's leases";
  EXPECT_EQ(renewer.watched(), 0u) << "its entry goes once the stop is requested";
}

TEST_F(RenewerTest, AMarginOfZeroStopsTheLeaseWhenItsTtlHasPassed) {
  auto lease = watched_lease(3s, 0ms);
  lease->answer = ScriptedLease::Answer::kFail;
  arm(lease);
  ASSERT_TRUE(stops_at(*lease, t0 + 3s));
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  EXPECT_TRUE(lease->stopped_before_on_lost);
  ASSERT_TRUE(settled());
}

TEST_F(RenewerTest, ARenewIfThatSaysNoSkipsRenewalsUntilItSaysYesOrTheTtlRunsOut) {
  std::atomic<bool> alive{false};
  std::atomic<int> asked{0};
  auto lease = watched_lease(3s, 900ms, [&] {
    ++asked;
    return alive.load();
  });
  arm(lease);
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return asked.load() == 1; }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 0u) << "renewed while renew_if said no";

  alive = true;  // asked again a third of the TTL later, and renewed
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return lease->attempt_count() == 1; }));
  EXPECT_EQ(lease->attempts().front(), t0 + 2s);
  ASSERT_TRUE(settled());
  EXPECT_FALSE(lease->stop_requested());

  alive = false;  // from the renewal at 2 s: stop at 4.1 s, lost at 5 s, no renewal sent
  ASSERT_TRUE(stops_at(*lease, t0 + 4100ms));
  clock.advance(900ms);
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 1u);
  EXPECT_TRUE(lease->stopped_before_on_lost);
}

TEST_F(RenewerTest, ARenewIfThatThrowsCountsAsNo) {
  auto lease = watched_lease(3s, std::nullopt, []() -> bool { throw std::runtime_error("hung"); });
  clock.advance(1s);
  ASSERT_TRUE(settled());
  clock.advance(2s);
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  ASSERT_TRUE(settled());
  EXPECT_EQ(lease->attempt_count(), 0u);
}

TEST_F(RenewerTest, AReleaseOrALossFoundByARenewalRequestsTheStop) {
  auto released = watched_lease(3s);
  arm(released);
  EXPECT_EQ(released->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(released->stop_requested());

  auto gone = watched_lease(3s);
  gone->answer = ScriptedLease::Answer::kGone;
  arm(gone);
  clock.advance(1s);
  ASSERT_TRUE(eventually([&] { return gone->lost_calls.load() == 1; }));
  EXPECT_TRUE(gone->stop_requested());
  EXPECT_TRUE(gone->stopped_before_on_lost);
  clock.advance(1s);  // the scheduler's next look, however the last renewal's wake-up fell
  ASSERT_TRUE(settled());
  EXPECT_EQ(renewer.watched(), 0u);
}

TEST_F(RenewerTest, AnUnarmedLeasesStopIsRequestedOnlyByItsLossOrRelease) {
  auto lease = watched_lease(3s);
  lease->answer = ScriptedLease::Answer::kFail;
  clock.advance(2500ms);
  ASSERT_TRUE(settled());
  EXPECT_FALSE(lease->stop_requested()) << "the stop deadline is watched once armed only";
  clock.advance(500ms);
  ASSERT_TRUE(eventually([&] { return lease->lost_calls.load() == 1; }));
  EXPECT_TRUE(lease->stop_requested());
  ASSERT_TRUE(settled());
}

TEST_F(RenewerTest, AnArmedSessionLikeLeaseIsStoppedWithinAPollOfItsLoss) {
  auto lease = new_lease(3s, std::nullopt, std::function<bool()>{}, /*expires=*/false);
  arm(lease);
  clock.advance(10s);
  ASSERT_TRUE(settled());
  EXPECT_FALSE(lease->stop_requested()) << "a lease without a TTL has no stop deadline";

  lease->broken = true;  // its session ended on the server
  clock.advance(LeaseCore::kLossPollInterval);
  ASSERT_TRUE(eventually([&] { return lease->stop_requested(); }));
  clock.advance(1s);  // the scheduler's next look drops it
  ASSERT_TRUE(settled());
  EXPECT_EQ(renewer.watched(), 0u);
  EXPECT_EQ(lease->lost_calls, 0);
}

}  // namespace
}  // namespace dblock::detail
