// SPDX-License-Identifier: Apache-2.0
// The waiting side of the unique-key lock (and of the semaphores) without a database: whom a
// release hands the key to or wakes, a wake-up passed on, a claimed waiter that sleeps past its own
// timeout until the hand-over is decided, a release's grant reaching the head it names, asleep
// or not, and a parked waiter's nudges. The listener runs without its listening thread (as on
// MySQL), so no connection is opened.
#include "unique_key/release_listener.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dblock/error.hpp"

namespace dblock::detail {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

// A source the listener must never use: it has no listening thread.
class NoSource final : public ConnectionSource {
 public:
  Dialect dialect() const noexcept override { return Dialect::kMySQL; }
  PooledConnection acquire() override {
    throw Error(ErrorCode::kFailedPrecondition, "the listener opened a connection");
  }
  std::string describe() const override { return "none"; }

 protected:
  void give_back(Connection*) noexcept override {}
};

// A waiter asleep in wait() on its own thread, accepting hand-overs as `owner`.
class Waiter {
 public:
  // `seq`: queued in the key's fair queue at that place (0: not queued).
  Waiter(ReleaseListener& listener, const std::string& owner, milliseconds timeout,
         std::int64_t seq = 0)
      : lease_{"k", 0, "lease-" + owner, Owner::named(owner), milliseconds(1000)} {
    thread_ = std::thread([this, &listener, timeout, owner, seq] {
      ReleaseListener::Interest interest(listener, "k");
      interest.accept_hand_over(lease_, metadata_);
      if (seq != 0) interest.queued_as("w-" + owner, seq);
      const auto from = Steady::now();
      started_ = true;
      interest.wait(timeout);
      took_ = Steady::now() - from;
      grant_ = interest.take_grant();
      done_ = true;
    });
    while (!started_) std::this_thread::yield();
  }
  ~Waiter() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_; }
  const std::optional<ReleaseListener::Grant>& grant() const { return grant_; }
  Steady::duration took() const { return took_; }
  const LeaseInfo& lease() const { return lease_; }

 private:
  LeaseInfo lease_;
  std::string metadata_;
  std::atomic<bool> started_{false}, done_{false};
  Steady::duration took_{};
  std::optional<ReleaseListener::Grant> grant_;
  std::thread thread_;
};

// Waits (up to 5 s) until `n` waiters of "k" sleep in wait().
void until_asleep(const ReleaseListener& listener, std::size_t n) {
  for (int i = 0; i < 5000 && listener.asleep("k") < n; ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_EQ(listener.asleep("k"), n);
}

// Claims the first waiter `releaser` may hand `key` to, once one sleeps (up to 5 s).
ReleaseListener::Interest* claim_when_asleep(ReleaseListener& listener, const Owner& releaser) {
  for (int i = 0; i < 5000; ++i) {
    if (auto* w = listener.claim_offer("k", releaser, false)) return w;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return nullptr;
}

// A listener and its one waiter "w" (waiting up to `timeout`), which a holder has claimed once it
// slept (`claimed` is null if it never did).
struct ClaimedWaiter {
  explicit ClaimedWaiter(milliseconds timeout)
      : waiter(listener, "w", timeout),
        claimed(claim_when_asleep(listener, Owner::named("holder"))) {}
  NoSource source;
  ReleaseListener listener{source, "channel", false};
  Waiter waiter;
  ReleaseListener::Interest* claimed;
};

TEST(ReleaseListener, AClaimedWaiterSleepsPastItsTimeoutUntilTheHandOverIsDecided) {
  ClaimedWaiter w(milliseconds(1000));
  ASSERT_NE(w.claimed, nullptr);
  EXPECT_EQ(w.claimed->lease().lease_id, "lease-w");
  std::this_thread::sleep_for(milliseconds(1500));  // past the waiter's timeout
  EXPECT_FALSE(w.waiter.done()) << "a claimed waiter gave up before the hand-over was decided";
  w.listener.resolve(*w.claimed, ReleaseListener::Grant{42, BootClock::now()});
  w.waiter.join();
  ASSERT_TRUE(w.waiter.grant());
  EXPECT_EQ(w.waiter.grant()->fencing_token, 42);
  EXPECT_GE(w.waiter.took(), milliseconds(1500));
}

TEST(ReleaseListener, ADeclinedHandOverWakesTheWaiterWithNothing) {
  ClaimedWaiter w(milliseconds(5000));
  ASSERT_NE(w.claimed, nullptr);
  w.listener.resolve(*w.claimed, std::nullopt);
  w.waiter.join();
  EXPECT_FALSE(w.waiter.grant());
  EXPECT_LT(w.waiter.took(), milliseconds(2000)) << "the declined waiter slept on";
}

TEST(ReleaseListener, AReleaseHandsTheKeyToTheLongestAsleepThatIsNotItsOwnOwner) {
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (const char* owner : {"holder", "a", "b"}) {
    waiters.push_back(std::make_unique<Waiter>(listener, owner, milliseconds(5000)));
    until_asleep(listener, waiters.size());  // asleep in this order
  }
  ReleaseListener::Interest* first = claim_when_asleep(listener, Owner::named("holder"));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->lease().owner, Owner::named("a")) << "not the longest asleep but the holder";
  ReleaseListener::Interest* second = listener.claim_offer("k", Owner::named("holder"), false);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->lease().owner, Owner::named("b"));
  EXPECT_EQ(listener.claim_offer("k", Owner::named("holder"), false), nullptr)
      << "the holder's own waiter was offered the key";
  listener.resolve(*first, ReleaseListener::Grant{1, BootClock::now()});
  listener.resolve(*second, std::nullopt);
  waiters[1]->join();
  waiters[2]->join();
  EXPECT_TRUE(waiters[1]->grant());
  EXPECT_FALSE(waiters[2]->grant());
  EXPECT_FALSE(waiters[0]->done());
  listener.released("k", true, "");  // a plain release wakes the one left
  waiters[0]->join();
  EXPECT_LT(waiters[0]->took(), milliseconds(4000));
}

TEST(ReleaseListener, AFairReleaseClaimsTheQueuedWaiterWithTheLowestPlace) {
  // Asleep in this order: one not queued, places 7, 3 and 5. A fair lock's release may hand the
  // key only to a queued waiter, the one nearest the head first (the statement then checks that
  // it heads the queue).
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (auto [owner, seq] : {std::pair{"n", 0}, {"a", 7}, {"b", 3}, {"c", 5}}) {
    waiters.push_back(std::make_unique<Waiter>(listener, owner, milliseconds(5000), seq));
    until_asleep(listener, waiters.size());
  }
  std::vector<std::string> claimed;
  while (auto* w = listener.claim_offer("k", Owner::named("holder"), true)) {
    claimed.push_back(w->waiter_id());
    listener.resolve(*w, std::nullopt);  // declined: that waiter returns with nothing
    if (claimed.size() > 4) break;
  }
  EXPECT_EQ(claimed, (std::vector<std::string>{"w-b", "w-c", "w-a"}));
  for (int i = 0; i < 4; ++i) listener.released("k", true, "");
  for (auto& w : waiters) w->join();
}

TEST(ReleaseListener, AfterARunOfHandOversAReleaseFreesTheKeyForEveryone) {
  // kMaxHandOvers hand-overs in a row; the next release hands nothing over and wakes no one here
  // at commit (waiters elsewhere must get their chance), and a hand-over after it is allowed.
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  ReleaseListener::Interest keep(listener, "k");  // the key's state lives throughout
  for (int i = 0; i < ReleaseListener::kMaxHandOvers; ++i) {
    Waiter waiter(listener, "w" + std::to_string(i), milliseconds(5000));
    ReleaseListener::Interest* claimed = claim_when_asleep(listener, Owner::named("holder"));
    ASSERT_NE(claimed, nullptr) << "hand-over " << i;
    listener.resolve(*claimed, ReleaseListener::Grant{i + 1, BootClock::now()});
    waiter.join();
    ASSERT_TRUE(waiter.grant());
  }
  Waiter waiter(listener, "late", milliseconds(1000));
  until_asleep(listener, 1);
  EXPECT_EQ(listener.claim_offer("k", Owner::named("holder"), false), nullptr)
      << "the key was handed over more than " << ReleaseListener::kMaxHandOvers << " times";
  listener.released("k", true, "");
  waiter.join();
  EXPECT_GE(waiter.took(), milliseconds(900)) << "a waiter here was woken ahead of the others";
  Waiter next(listener, "next", milliseconds(5000));
  ReleaseListener::Interest* claimed = claim_when_asleep(listener, Owner::named("holder"));
  ASSERT_NE(claimed, nullptr) << "no hand-over after the key was freed";
  listener.resolve(*claimed, std::nullopt);
}

TEST(ReleaseListener, EachReleaseWakesOneWaiterAndOneNoOneSleptForIsNotMissed) {
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  // Freed while no one sleeps: the next to sleep wakes at once.
  ReleaseListener::Interest nobody_yet(listener, "k");  // keeps the key's state
  listener.released("k", true, "");
  {
    ReleaseListener::Interest interest(listener, "k");
    const auto from = Steady::now();
    interest.wait(milliseconds(5000));
    EXPECT_LT(Steady::now() - from, milliseconds(2000)) << "a release no one slept for was lost";
  }
  // Two asleep: one release wakes one of them, not both; the next wakes the other.
  Waiter a(listener, "a", milliseconds(5000));
  Waiter b(listener, "b", milliseconds(5000));
  until_asleep(listener, 2);
  listener.released("k", true, "");
  for (int i = 0; i < 2000 && !a.done() && !b.done(); ++i) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(int{a.done()} + int{b.done()}, 1);
  listener.released("k", true, "");
  a.join();
  b.join();
  EXPECT_LT(std::max(a.took(), b.took()), milliseconds(4000)) << "the second release was lost";
}

// A waiter that took what a release freed passes the wake-up on (a semaphore's permits): to the
// one asleep longest, one at a time; with no one asleep, nothing is left pending.
TEST(ReleaseListener, PassingOnWakesTheWaiterAsleepLongestAndLeavesNothingPending) {
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  ReleaseListener::Interest keeps_state(listener, "k");
  listener.pass_on("k");  // no one asleep
  {
    ReleaseListener::Interest interest(listener, "k");
    const auto from = Steady::now();
    interest.wait(milliseconds(300));
    EXPECT_GE(Steady::now() - from, milliseconds(300)) << "a pass-on no one slept for was kept";
  }
  Waiter first(listener, "first", milliseconds(5000));
  until_asleep(listener, 1);
  Waiter second(listener, "second", milliseconds(5000));
  until_asleep(listener, 2);
  listener.pass_on("k");
  first.join();
  EXPECT_LT(first.took(), milliseconds(4000)) << "the longest asleep was not woken";
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(second.done()) << "one pass-on woke two waiters";
  listener.pass_on("k");
  second.join();
  EXPECT_LT(second.took(), milliseconds(4000));
}

// A parked waiter (AsyncLock's) is nudged instead of woken: once per rearm, one waiter per
// release among the sleeping and the parked (the longest waiting first), a release no one took is
// kept for its rearm, and it is never offered a hand-over.
TEST(ReleaseListener, AParkedWaiterIsNudgedOncePerRearmAndNeverHandedTheKey) {
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  std::atomic<int> nudges{0};
  auto parked = std::make_unique<ReleaseListener::Interest>(listener, "k");
  parked->park([&] { ++nudges; });
  EXPECT_EQ(listener.claim_offer("k", Owner::named("holder"), false), nullptr)
      << "a parked waiter was offered a hand-over";
  listener.released("k", true, "");
  EXPECT_EQ(nudges.load(), 1);
  listener.released("k", true, "");  // not rearmed: kept for the next to wait
  EXPECT_EQ(nudges.load(), 1);
  parked->rearm();  // takes the release no one was asleep for, at once
  EXPECT_EQ(nudges.load(), 2);
  parked->rearm();
  // Parked before it, the parked waiter goes first; the sleeper gets the next release.
  Waiter sleeper(listener, "s", milliseconds(5000));
  until_asleep(listener, 2);
  listener.released("k", true, "");
  EXPECT_EQ(nudges.load(), 3);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(sleeper.done()) << "one release woke two waiters";
  listener.released("k", true, "");
  sleeper.join();
  EXPECT_LT(sleeper.took(), milliseconds(4000));
  EXPECT_EQ(nudges.load(), 3);
  parked.reset();  // leaves the key's waiters
  EXPECT_EQ(listener.asleep("k"), 0u);
}

// A notification's head "waiter token sent_us" carries a grant; anything else is a wake-up only.
TEST(ReleaseListener, AGrantIsReadFromTheHeadOfANotification) {
  std::string head = "w-a 1234 -56";
  const auto grant = ReleaseListener::parse_head(head);
  ASSERT_TRUE(grant);
  EXPECT_EQ(head, "w-a");
  EXPECT_EQ(grant->fencing_token, 1234);
  EXPECT_EQ(grant->sent_us, -56);
  EXPECT_TRUE(grant->elsewhere);
  EXPECT_EQ(grant->sent.time_since_epoch(), std::chrono::microseconds(-56));
  for (std::string other : {"w-a", "", "w-a 12", "w-a 12 x", "w-a x 12", "w-a 12 34 56"}) {
    const std::string waiter = other.substr(0, other.find(' '));
    EXPECT_FALSE(ReleaseListener::parse_head(other)) << other;
    EXPECT_EQ(other, waiter);
  }
}

// A release's grant goes to the head it names, with its token and stamp, whether the head sleeps
// then or comes to sleep later; no other waiter is woken, and a wake-up for everyone carries none.
TEST(ReleaseListener, AGrantReachesTheHeadItNamesAsleepOrNot) {
  NoSource source;
  ReleaseListener listener(source, "channel", false);
  Waiter a(listener, "a", milliseconds(5000), 1);
  Waiter b(listener, "b", milliseconds(5000), 2);
  until_asleep(listener, 2);
  listener.released("k", true, "w-b", ReleaseListener::Grant::granted(77, 99));
  b.join();
  ASSERT_TRUE(b.grant());
  EXPECT_EQ(b.grant()->fencing_token, 77);
  EXPECT_EQ(b.grant()->sent_us, 99);
  EXPECT_TRUE(b.grant()->elsewhere);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(a.done()) << "a grant to b woke a";
  // Named while it does not sleep: it takes the grant when it next waits.
  {
    ReleaseListener::Interest c(listener, "k");
    c.queued_as("w-c", 3);
    listener.released("k", true, "w-c", ReleaseListener::Grant::granted(78, 100));
    const auto from = Steady::now();
    c.wait(milliseconds(5000));
    EXPECT_LT(Steady::now() - from, milliseconds(2000));
    const auto grant = c.take_grant();
    ASSERT_TRUE(grant);
    EXPECT_EQ(grant->fencing_token, 78);
  }
  listener.released("k", true, "w-a");  // no grant: a wake-up
  a.join();
  EXPECT_FALSE(a.grant());
}

}  // namespace
}  // namespace dblock::detail
