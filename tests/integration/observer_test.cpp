// SPDX-License-Identifier: Apache-2.0
// Events (dblock/observer.hpp) against every database x driver pair, from the side of what an
// observer is told: each acquisition reports one start and one end with its outcome, wait,
// tries and statements; each lease reports its end once, its renewals, and its loss at most
// once with the reason that matches what happened to it (its TTL ran out, another owner took the
// key, an operator removed it, its session was killed); every strategy names itself; a lease
// keeps reporting to the observers it was acquired under; nothing is reported to an observer
// removed before an acquisition.
#include "dblock/observer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/election.hpp"
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "tagged_pool.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// One event as an observer saw it, its views copied.
struct Seen {
  std::string kind;  // "started", "ended", "renewed", "renewal_failed", "lost", "released"
  std::string strategy;
  std::string key;
  std::int64_t token = 0;
  std::string lease_id;
  std::optional<milliseconds> timeout;
  AcquireOutcome outcome = AcquireOutcome::kFailed;
  std::chrono::nanoseconds duration{0};  // waited, latency or held_for
  int attempts = 0;
  int statements = 0;
  std::string error;
  milliseconds time_left{0};
  bool flag = false;  // background (renewals) or dropped (released)
  LossReason reason = LossReason::kGone;
  ReleaseOutcome released = ReleaseOutcome::kReleased;
  bool lost = false;                 // released: lost before or by the release
  std::string candidate;             // term_began, term_ended
  TermEnd why = TermEnd::kReturned;  // term_ended
};

class Recorder final : public Observer {
 public:
  void acquire_started(const AcquireStarted& e) override {
    Seen s;
    s.kind = "started";
    s.strategy = std::string(e.strategy);
    s.key = std::string(e.key);
    s.timeout = e.timeout;
    add(std::move(s));
  }
  void acquire_ended(const AcquireEnded& e) override {
    Seen s = of("ended", e.lease);
    s.strategy = std::string(e.strategy);
    s.key = std::string(e.key);
    s.timeout = e.timeout;
    s.outcome = e.outcome;
    s.duration = e.waited;
    s.attempts = e.attempts;
    s.statements = e.statements;
    s.error = std::string(e.error);
    add(std::move(s));
  }
  void renewed(const Renewed& e) override {
    Seen s = of("renewed", e.lease);
    s.duration = e.latency;
    s.flag = e.background;
    add(std::move(s));
  }
  void renewal_failed(const RenewalFailed& e) override {
    Seen s = of("renewal_failed", e.lease);
    s.error = std::string(e.error);
    s.time_left = e.time_left;
    s.flag = e.background;
    add(std::move(s));
  }
  void lost(const LeaseLost& e) override {
    Seen s = of("lost", e.lease);
    s.reason = e.reason;
    s.duration = e.held_for;
    add(std::move(s));
  }
  void released(const Released& e) override {
    Seen s = of("released", e.lease);
    s.duration = e.held_for;
    s.released = e.outcome;
    s.flag = e.dropped;
    s.error = std::string(e.error);
    s.lost = e.lost;
    add(std::move(s));
  }

  void term_began(const TermEvent& e) override { add(term("term_began", e)); }
  void term_ended(const TermEvent& e) override { add(term("term_ended", e)); }

  void waiter_queued(const WaiterEvent& e) override { add(waiter("queued", e)); }
  void waiter_left(const WaiterEvent& e) override { add(waiter("left", e)); }
  void pool_exhausted(const PoolExhausted& e) override {
    Seen s;
    s.kind = "pool_exhausted";
    s.token = static_cast<std::int64_t>(e.max_size);
    s.time_left = e.waited;
    add(std::move(s));
  }

  // The events of `kind` about `key`.
  std::vector<Seen> of_kind(const std::string& kind, const std::string& key) const {
    std::lock_guard lock(mu_);
    std::vector<Seen> out;
    for (const Seen& s : seen_) {
      if (s.kind == kind && s.key == key) out.push_back(s);
    }
    return out;
  }
  // The kinds of every event about `key`, in order.
  std::vector<std::string> kinds(const std::string& key) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const Seen& s : seen_) {
      if (s.key == key) out.push_back(s.kind);
    }
    return out;
  }
  // Waits up to 10 s for an event of `kind` about `key`.
  bool wait_for(const std::string& kind, const std::string& key) const {
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (of_kind(kind, key).empty()) {
      if (Clock::now() > give_up) return false;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return true;
  }
  std::string all(const std::string& key) const {
    std::string out;
    for (const auto& k : kinds(key)) out += k + " ";
    return out;
  }

 private:
  static Seen of(const char* kind, const LeaseEvent& lease) {
    Seen s;
    s.kind = kind;
    s.strategy = std::string(lease.strategy);
    s.key = std::string(lease.key);
    s.token = lease.fencing_token;
    s.lease_id = std::string(lease.lease_id);
    return s;
  }
  static Seen term(const char* kind, const TermEvent& e) {
    Seen s;
    s.kind = kind;
    s.key = std::string(e.election);
    s.candidate = std::string(e.candidate);
    s.token = e.term;
    s.duration = e.lasted;
    s.why = e.why;
    return s;
  }
  static Seen waiter(const char* kind, const WaiterEvent& e) {
    Seen s;
    s.kind = kind;
    s.strategy = std::string(e.strategy);
    s.key = std::string(e.key);
    s.lease_id = std::string(e.waiter_id);
    s.token = e.place;
    s.flag = e.got_key;
    return s;
  }
  void add(Seen s) {
    std::lock_guard lock(mu_);
    seen_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
};

class ObserverTest : public MigratedPoolTest {
 protected:
  ObserverTest() : MigratedPoolTest("obs", 3) {}
  void TearDown() override {
    set_observer(nullptr);
    MigratedPoolTest::TearDown();
  }
  // Options of owner `owner` reporting to recorder_.
  LockOptions observed(const std::string& owner,
                       std::chrono::milliseconds ttl = std::chrono::seconds(30),
                       bool auto_renew = true) {
    LockOptions o = as(owner, ttl, auto_renew);
    o.observer = recorder_;
    return o;
  }
  std::shared_ptr<Recorder> recorder_ = std::make_shared<Recorder>();
};

TEST_P(ObserverTest, EachAcquisitionReportsOneStartAndOneEndWithWhatHappened) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("acq");
  auto lease = lock.try_acquire(key, observed("a"));
  ASSERT_TRUE(lease);
  EXPECT_FALSE(lock.try_acquire(key, observed("b")));
  EXPECT_FALSE(lock.acquire(key, milliseconds(300), observed("c")));
  EXPECT_THROW(lock.try_acquire(key,
                                [&] {
                                  LockOptions o = observed("d");
                                  o.ttl = milliseconds(0);  // refused before anything is sent
                                  return o;
                                }()),
               Error);

  const auto started = recorder_->of_kind("started", key);
  const auto ended = recorder_->of_kind("ended", key);
  ASSERT_EQ(started.size(), 4u) << recorder_->all(key);
  ASSERT_EQ(ended.size(), 4u) << recorder_->all(key);
  for (const Seen& s : ended) EXPECT_EQ(s.strategy, "unique_key");
  EXPECT_FALSE(started[0].timeout);
  ASSERT_TRUE(started[2].timeout);
  EXPECT_EQ(*started[2].timeout, milliseconds(300));

  EXPECT_EQ(ended[0].outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(ended[0].token, lease->fencing_token());
  EXPECT_EQ(ended[0].lease_id, lease->lease_id());
  EXPECT_EQ(ended[0].attempts, 1);
  EXPECT_GE(ended[0].statements, 1);
  EXPECT_LE(ended[0].statements, 3) << "an uncontended acquire sends one statement or a few";

  EXPECT_EQ(ended[1].outcome, AcquireOutcome::kBusy);
  EXPECT_EQ(ended[1].token, 0);
  EXPECT_TRUE(ended[1].lease_id.empty());
  EXPECT_EQ(ended[1].attempts, 1);

  EXPECT_EQ(ended[2].outcome, AcquireOutcome::kTimedOut);
  EXPECT_GE(ended[2].duration, milliseconds(300));
  EXPECT_GE(ended[2].attempts, 2) << "a waiter tries more than once in 300 ms";
  EXPECT_GE(ended[2].statements, ended[2].attempts);

  EXPECT_EQ(ended[3].outcome, AcquireOutcome::kFailed);
  EXPECT_NE(ended[3].error.find("TTL"), std::string::npos) << ended[3].error;
  EXPECT_EQ(ended[3].statements, 0);
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, ALeaseReportsItsEndOnceWhetherReleasedOrDropped) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("end");
  {
    auto lease = lock.try_acquire(key, observed("a"));
    ASSERT_TRUE(lease);
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  }
  {
    auto dropped = lock.try_acquire(key, observed("a"));
    ASSERT_TRUE(dropped);
  }  // dropped: released by its destructor
  const auto released = recorder_->of_kind("released", key);
  ASSERT_EQ(released.size(), 2u) << recorder_->all(key);
  EXPECT_FALSE(released[0].flag);
  EXPECT_EQ(released[0].released, ReleaseOutcome::kReleased);
  EXPECT_GE(released[0].duration, milliseconds(200));
  EXPECT_TRUE(released[1].flag) << "the second lease was dropped";
  EXPECT_EQ(released[1].released, ReleaseOutcome::kReleased);
  EXPECT_GT(released[1].token, released[0].token);
  EXPECT_FALSE(released[0].lost);
  EXPECT_FALSE(released[1].lost);
  EXPECT_TRUE(recorder_->of_kind("lost", key).empty()) << recorder_->all(key);
}

TEST_P(ObserverTest, RenewalsReportTheirLatencyAndWhoSentThem) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("renew");
  auto lease = lock.try_acquire(key, observed("a", milliseconds(900)));
  ASSERT_TRUE(lease);
  ASSERT_TRUE(recorder_->wait_for("renewed", key));  // the renewer's, at a third of the TTL
  const Seen background = recorder_->of_kind("renewed", key).front();
  EXPECT_TRUE(background.flag);
  EXPECT_GT(background.duration, std::chrono::nanoseconds(0));
  EXPECT_LT(background.duration, milliseconds(900));
  EXPECT_EQ(background.token, lease->fencing_token());
  ASSERT_TRUE(lease->renew(milliseconds(5000)));
  const auto renewed = recorder_->of_kind("renewed", key);
  ASSERT_GE(renewed.size(), 2u);
  const auto explicit_one =
      std::find_if(renewed.begin(), renewed.end(), [](const Seen& s) { return !s.flag; });
  ASSERT_NE(explicit_one, renewed.end()) << "Lease::renew() reports background = false";
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, FailedRenewalsReportTheTimeLeftThenTheLossOnceBeforeOnLost) {
  TaggedPool tagged(backend(), 2);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("cut");
  LockOptions o = observed("a", milliseconds(1500));
  std::atomic<int> lost_events_at_on_lost{-1};
  o.on_lost = [&](const std::string& k) {
    lost_events_at_on_lost = static_cast<int>(recorder_->of_kind("lost", k).size());
  };
  auto lease = lock.try_acquire(key, o);
  ASSERT_TRUE(lease);
  tagged.refuse_connections(true);
  auto killer = backend().connect();
  tagged.kill_sessions(*killer);
  ASSERT_TRUE(recorder_->wait_for("lost", key)) << recorder_->all(key);
  const auto failed = recorder_->of_kind("renewal_failed", key);
  ASSERT_FALSE(failed.empty()) << recorder_->all(key);
  for (const Seen& f : failed) {
    EXPECT_TRUE(f.flag);
    EXPECT_FALSE(f.error.empty());
    EXPECT_LT(f.time_left, milliseconds(1500));
  }
  // on_lost follows the event on the same thread: wait for it, then for anything more.
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (lost_events_at_on_lost.load() < 0 && Clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  std::this_thread::sleep_for(milliseconds(300));
  const auto lost = recorder_->of_kind("lost", key);
  ASSERT_EQ(lost.size(), 1u) << recorder_->all(key);
  EXPECT_EQ(lost[0].reason, LossReason::kExpired);
  EXPECT_GE(lost[0].duration, milliseconds(1500));
  EXPECT_EQ(lost_events_at_on_lost.load(), 1) << "the lost event comes before on_lost";
  tagged.refuse_connections(false);
  EXPECT_NO_THROW(lease->release());
  EXPECT_EQ(recorder_->of_kind("lost", key).size(), 1u) << "a lost lease's release reports no "
                                                           "second loss: "
                                                        << recorder_->all(key);
  const auto released = recorder_->of_kind("released", key);
  ASSERT_EQ(released.size(), 1u) << recorder_->all(key);
  EXPECT_TRUE(released[0].lost) << "released after it was lost";
}

TEST_P(ObserverTest, ALossFoundByARenewalSaysWhetherTheKeyWasTakenOverRemovedOrExpired) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  // Expired: the row is still ours but past its TTL when the renewal comes.
  const std::string expired = unique_name("expired");
  auto a = lock.try_acquire(expired, observed("a", milliseconds(200), false));
  ASSERT_TRUE(a);
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_FALSE(a->renew());
  // Taken over: another owner holds the key now.
  const std::string taken = unique_name("taken");
  auto b = lock.try_acquire(taken, observed("a", milliseconds(200), false));
  ASSERT_TRUE(b);
  std::this_thread::sleep_for(milliseconds(400));
  auto other = lock.try_acquire(taken, as("b"));
  ASSERT_TRUE(other);
  EXPECT_FALSE(b->renew());
  // Removed: an operator's forced release.
  const std::string removed = unique_name("removed");
  auto c = lock.try_acquire(removed, observed("a", std::chrono::seconds(30), false));
  ASSERT_TRUE(c);
  release_by_operator(removed);
  EXPECT_FALSE(c->renew());

  for (const auto& [key, reason] :
       std::vector<std::pair<std::string, LossReason>>{{expired, LossReason::kExpired},
                                                       {taken, LossReason::kTakenOver},
                                                       {removed, LossReason::kRemoved}}) {
    const auto lost = recorder_->of_kind("lost", key);
    ASSERT_EQ(lost.size(), 1u) << key << ": " << recorder_->all(key);
    EXPECT_EQ(lost[0].reason, reason) << key << ": " << to_string(lost[0].reason);
  }
  for (auto* lease : {&a, &b, &c}) EXPECT_EQ((*lease)->release(), ReleaseOutcome::kNotHeld);
  for (const auto& key : {expired, taken, removed}) {
    EXPECT_EQ(recorder_->of_kind("lost", key).size(), 1u) << recorder_->all(key);
    const auto released = recorder_->of_kind("released", key);
    ASSERT_EQ(released.size(), 1u) << recorder_->all(key);
    EXPECT_EQ(released[0].released, ReleaseOutcome::kNotHeld);
    EXPECT_TRUE(released[0].lost);
  }
  EXPECT_EQ(other->release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, ALossFoundByTheReleaseIsReportedBeforeTheRelease) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("late");
  auto lease = lock.try_acquire(key, observed("a", milliseconds(200), false));
  ASSERT_TRUE(lease);
  std::this_thread::sleep_for(milliseconds(400));
  auto other = lock.try_acquire(key, as("b"));
  ASSERT_TRUE(other);
  EXPECT_EQ(lease->release(), ReleaseOutcome::kNotHeld);
  EXPECT_EQ(recorder_->kinds(key),
            (std::vector<std::string>{"started", "ended", "lost", "released"}));
  const auto lost = recorder_->of_kind("lost", key);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].reason, LossReason::kTakenOver);
  EXPECT_TRUE(recorder_->of_kind("released", key).at(0).lost);
  EXPECT_EQ(other->release(), ReleaseOutcome::kReleased);
}

// Each lease of `expected` (key, reason) reported exactly one loss, with that reason, by
// `strategy`, and, once released, one end that says it was lost.
void expect_losses(const Recorder& recorder, const std::string& strategy,
                   const std::vector<std::pair<std::string, LossReason>>& expected) {
  for (const auto& [key, reason] : expected) {
    const auto lost = recorder.of_kind("lost", key);
    ASSERT_EQ(lost.size(), 1u) << key << ": " << recorder.all(key);
    EXPECT_EQ(lost[0].reason, reason) << key << ": " << to_string(lost[0].reason);
    EXPECT_EQ(lost[0].strategy, strategy) << key;
    const auto released = recorder.of_kind("released", key);
    ASSERT_EQ(released.size(), 1u) << key << ": " << recorder.all(key);
    EXPECT_EQ(released[0].released, ReleaseOutcome::kNotHeld) << key;
    EXPECT_TRUE(released[0].lost) << key;
  }
}

// A permit is the row of its slot: taken over when a later permit holds that slot, removed when
// an operator freed it or the cleaner deleted it, expired when the row is still its own.
TEST_P(ObserverTest, APermitFoundGoneSaysWhetherItsSlotWasTakenOverOrItWasRemoved) {
  Semaphore permits(*pool_, 1, SemaphoreOptions{.tables = tables_});
  const std::string removed = unique_name("removed");
  const std::string taken = unique_name("taken");
  const std::string expired = unique_name("expired");
  const std::string cleaned = unique_name("cleaned");
  auto a = permits.try_acquire(removed, observed("a", std::chrono::seconds(30), false));
  auto b = permits.try_acquire(taken, observed("a", milliseconds(200), false));
  auto c = permits.try_acquire(expired, observed("a", milliseconds(200), false));
  auto d = permits.try_acquire(cleaned, observed("a", milliseconds(200), false));
  ASSERT_TRUE(a && b && c && d);
  // Removed: an operator's forced release, found by a renewal.
  release_permit_by_operator(removed);
  EXPECT_FALSE(a->renew());
  std::this_thread::sleep_for(milliseconds(400));
  // Taken over: its slot (the key's only one) ran out and another owner took it.
  auto other = permits.try_acquire(taken, as("b"));
  ASSERT_TRUE(other);
  EXPECT_FALSE(b->renew());
  // Expired: its row is still its own, past its TTL.
  EXPECT_FALSE(c->renew());
  // Removed: the cleaner deleted it once it had expired, found by the release.
  CleanOptions no_grace;
  no_grace.grace = milliseconds(0);
  clean(*pool_->acquire(), tables_, no_grace);
  ASSERT_EQ(rows_of_key("semaphore_permits", cleaned), 0);
  EXPECT_EQ(d->release(), ReleaseOutcome::kNotHeld);
  for (auto* lease : {&a, &b, &c}) EXPECT_EQ((*lease)->release(), ReleaseOutcome::kNotHeld);
  expect_losses(*recorder_, "semaphore",
                {{removed, LossReason::kRemoved},
                 {taken, LossReason::kTakenOver},
                 {expired, LossReason::kExpired},
                 {cleaned, LossReason::kRemoved}});
  EXPECT_EQ(other->release(), ReleaseOutcome::kReleased);
}

// A reader-writer lease is taken over by a later holder of its slot, or by the holders it kept
// out once it ran out: a writer by readers let in, a reader by a writer let in.
TEST_P(ObserverTest, AReaderWriterLeaseFoundGoneSaysWhoTookItOverOrThatItWasRemoved) {
  ReadWriteLock rw(*pool_, ReadWriteLockOptions{.tables = tables_, .max_readers = 1});
  struct Case {
    Lock& lock;
    std::string key;
    std::optional<Lease> lease;
  };
  std::vector<Case> writers, readers;
  for (const char* name : {"removed", "by_writer", "by_reader", "expired"}) {
    writers.push_back({rw.writer(), unique_name(std::string("w_") + name), std::nullopt});
    readers.push_back({rw.reader(), unique_name(std::string("r_") + name), std::nullopt});
  }
  for (auto* cases : {&writers, &readers}) {
    for (std::size_t i = 0; i < cases->size(); ++i) {
      Case& c = (*cases)[i];
      const auto ttl = i == 0 ? milliseconds(std::chrono::seconds(30)) : milliseconds(200);
      c.lease = c.lock.try_acquire(c.key, observed("a", ttl, false));
      ASSERT_TRUE(c.lease) << c.key;
    }
  }
  // Removed: an operator's forced release, found by a renewal.
  for (auto* cases : {&writers, &readers}) {
    release_permit_by_operator((*cases)[0].key);
    EXPECT_FALSE((*cases)[0].lease->renew());
  }
  std::this_thread::sleep_for(milliseconds(400));
  // Taken over by a writer let in (into slot 0), found by a renewal, and by a reader let in (into
  // slot 1, the only reader slot), found by the release: for a writer, a later writer of its
  // slot and readers it kept out; for a reader, a writer it kept out and a later reader of its
  // slot.
  std::vector<Lease> others;
  for (auto* cases : {&writers, &readers}) {
    for (std::size_t i = 1; i <= 2; ++i) {
      Lock& by = i == 1 ? rw.writer() : rw.reader();
      auto other = by.try_acquire((*cases)[i].key, as("b"));
      ASSERT_TRUE(other) << (*cases)[i].key;
      others.push_back(std::move(*other));
    }
    EXPECT_FALSE((*cases)[1].lease->renew());
    // Expired: nobody came.
    EXPECT_FALSE((*cases)[3].lease->renew());
  }
  for (auto* cases : {&writers, &readers}) {
    for (Case& c : *cases) EXPECT_EQ(c.lease->release(), ReleaseOutcome::kNotHeld) << c.key;
  }
  expect_losses(*recorder_, "writer",
                {{writers[0].key, LossReason::kRemoved},
                 {writers[1].key, LossReason::kTakenOver},
                 {writers[2].key, LossReason::kTakenOver},
                 {writers[3].key, LossReason::kExpired}});
  expect_losses(*recorder_, "reader",
                {{readers[0].key, LossReason::kRemoved},
                 {readers[1].key, LossReason::kTakenOver},
                 {readers[2].key, LossReason::kTakenOver},
                 {readers[3].key, LossReason::kExpired}});
  for (Lease& other : others) EXPECT_EQ(other.release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, ASessionLockWhoseSessionIsKilledReportsItsSessionEnded) {
  auto own = open_pool(backend().url(), {.max_size = 1});
  SessionLock sessions(*own, SessionLockOptions{.tables = tables_});
  const std::string key = unique_name("session");
  auto lease = sessions.try_acquire(key, observed("a"));
  ASSERT_TRUE(lease);
  std::int64_t id = 0;
  {
    SessionConnection conn(*lease);
    id = backend().session_id(*conn);
  }
  auto killer = pool_->acquire();
  backend().kill_session(*killer, id);
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!lease->lost() && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(lease->lost());
  try {
    lease->release();
  } catch (const Error&) {
    // The session is gone: the release may say so.
  }
  const auto lost = recorder_->of_kind("lost", key);
  ASSERT_EQ(lost.size(), 1u) << recorder_->all(key);
  EXPECT_EQ(lost[0].reason, LossReason::kSessionEnded);
  EXPECT_EQ(lost[0].strategy, "session");
  const auto released = recorder_->of_kind("released", key);
  ASSERT_EQ(released.size(), 1u) << recorder_->all(key);
  EXPECT_EQ(released[0].released, ReleaseOutcome::kNotHeld);
  EXPECT_TRUE(released[0].lost);
}

TEST_P(ObserverTest, EveryStrategyNamesItselfAndReportsItsLeasesEnd) {
  Semaphore permits(*pool_, 2, SemaphoreOptions{.tables = tables_});
  ReadWriteLock rw(*pool_, ReadWriteLockOptions{.tables = tables_});
  RowLock rows(*pool_, RowLockOptions{.tables = tables_});
  OptimisticLock versions(*pool_, OptimisticLockOptions{.tables = tables_});
  SessionLock sessions(*pool_, SessionLockOptions{.tables = tables_});
  const std::vector<std::pair<Lock*, std::string>> locks = {
      {&permits, "semaphore"}, {&rw.reader(), "reader"},  {&rw.writer(), "writer"},
      {&rows, "row"},          {&versions, "optimistic"}, {&sessions, "session"}};
  for (const auto& [lock, name] : locks) {
    const std::string key = unique_name(name);
    auto lease = lock->acquire(key, std::chrono::seconds(5), observed("a"));
    ASSERT_TRUE(lease) << name;
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased) << name;
    EXPECT_EQ(recorder_->kinds(key), (std::vector<std::string>{"started", "ended", "released"}))
        << name;
    const auto ended = recorder_->of_kind("ended", key);
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].strategy, name);
    EXPECT_EQ(ended[0].outcome, AcquireOutcome::kAcquired) << name;
    EXPECT_GE(ended[0].statements, 1) << name;
    EXPECT_EQ(recorder_->of_kind("released", key).at(0).strategy, name);
    EXPECT_FALSE(recorder_->of_kind("released", key).at(0).lost) << name;
  }
  // A reader refused by a writer: the permit it took and gave back is no lease of the caller's.
  const std::string key = unique_name("rw");
  auto writer = rw.writer().try_acquire(key, as("w"));
  ASSERT_TRUE(writer);
  EXPECT_FALSE(rw.reader().try_acquire(key, observed("r")));
  EXPECT_EQ(recorder_->kinds(key), (std::vector<std::string>{"started", "ended"}));
  EXPECT_EQ(recorder_->of_kind("ended", key).at(0).outcome, AcquireOutcome::kBusy);
  EXPECT_EQ(writer->release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, AProcessWideObserverKeepsTheLeasesAcquiredUnderIt) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("global");
  auto global = std::make_shared<Recorder>();
  set_observer(global);
  EXPECT_EQ(observer(), global);
  auto lease = lock.try_acquire(key, as("a"));
  ASSERT_TRUE(lease);
  set_observer(nullptr);
  EXPECT_EQ(observer(), nullptr);
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(global->kinds(key), (std::vector<std::string>{"started", "ended", "released"}));
  // Acquired after the removal: not reported.
  auto later = lock.try_acquire(key, as("a"));
  ASSERT_TRUE(later);
  EXPECT_EQ(later->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(global->kinds(key).size(), 3u);
  // Both installed: each is told.
  set_observer(global);
  auto both = lock.try_acquire(key, observed("a"));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(global->kinds(key).size(), 6u);
  EXPECT_EQ(recorder_->kinds(key), (std::vector<std::string>{"started", "ended", "released"}));
}

TEST_P(ObserverTest, AFairWaiterReportsItsPlaceAndWhetherItLeftWithTheKey) {
  UniqueKeyLock lock(*pool_, {.tables = tables_, .fair = true});
  const std::string key = unique_name("fair");
  auto holder = lock.try_acquire(key, as("a"));
  ASSERT_TRUE(holder);
  std::optional<Lease> got;
  std::thread waiter([&] { got = lock.acquire(key, std::chrono::seconds(10), observed("b")); });
  const bool queued = recorder_->wait_for("queued", key);
  EXPECT_EQ(holder->release(), ReleaseOutcome::kReleased);
  waiter.join();
  ASSERT_TRUE(queued) << recorder_->all(key);
  ASSERT_TRUE(got);
  // A second waiter gives up while the first holds the key.
  EXPECT_FALSE(lock.acquire(key, milliseconds(400), observed("c")));
  EXPECT_EQ(recorder_->kinds(key),
            (std::vector<std::string>{"started", "queued", "left", "ended", "started", "queued",
                                      "left", "ended"}));
  const auto in = recorder_->of_kind("queued", key);
  const auto out = recorder_->of_kind("left", key);
  ASSERT_EQ(in.size(), 2u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(in[0].strategy, "unique_key");
  EXPECT_FALSE(in[0].lease_id.empty());
  EXPECT_EQ(out[0].lease_id, in[0].lease_id) << "the same waiter leaves";
  EXPECT_EQ(out[0].token, in[0].token);
  EXPECT_TRUE(out[0].flag) << "the first waiter left with the key";
  EXPECT_FALSE(out[1].flag) << "the second timed out";
  EXPECT_LT(in[0].token, in[1].token) << "later waiters queue behind";
  EXPECT_EQ(got->release(), ReleaseOutcome::kReleased);
}

TEST_P(ObserverTest, AnExhaustedPoolIsReportedToTheAcquisitionAndTheProcess) {
  auto small = open_pool(backend().url(), {.max_size = 1, .acquire_timeout = milliseconds(200)});
  UniqueKeyLock lock(*small, {.tables = tables_, .notify = false});
  const std::string key = unique_name("pool");
  auto global = std::make_shared<Recorder>();
  set_observer(global);
  {
    PooledConnection taken = small->acquire();
    EXPECT_THROW(lock.try_acquire(key, observed("a")), Error);
    EXPECT_THROW(small->acquire(), Error);  // no acquisition: the process-wide observer only
  }
  set_observer(nullptr);
  const auto mine = recorder_->of_kind("pool_exhausted", "");
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].token, 1);
  EXPECT_EQ(mine[0].time_left, milliseconds(200));
  EXPECT_EQ(global->of_kind("pool_exhausted", "").size(), 2u);
  const auto ended = recorder_->of_kind("ended", key);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome, AcquireOutcome::kFailed);
  EXPECT_NE(ended[0].error.find("no free connection"), std::string::npos) << ended[0].error;
}

// An election's campaign is a unique-key lock's acquisitions and each term's lease: a candidate
// with an observer reports them to it (and to the process-wide one), its own only.
TEST_P(ObserverTest, AnElectionsCandidateReportsItsCampaignToItsObserver) {
  const std::string name = unique_name("election");
  auto global = std::make_shared<Recorder>();
  set_observer(global);
  auto second_seen = std::make_shared<Recorder>();
  ElectionOptions first_options{.ttl = milliseconds(900),
                                .rejoin_after = std::chrono::hours(1),
                                .observer = recorder_,
                                .tables = tables_};
  ElectionOptions second_options = first_options;
  second_options.observer = second_seen;
  Election first(*pool_, name, first_options);
  Election second(*pool_, name, second_options);

  // The first leads until the second has waited out a whole acquire and the first has renewed;
  // then its work returns (it resigns) and the second takes over.
  std::atomic<std::int64_t> first_term{0}, second_term{0};
  std::atomic<bool> resign{false};
  std::stop_source stop_first, stop_second;
  std::thread a([&] {
    first.campaign(
        [&](const Term& term) {
          first_term = term.number();
          while (!resign && !term.stop_token().stop_requested()) {
            std::this_thread::sleep_for(milliseconds(5));
          }
        },
        stop_first.get_token());
  });
  const auto give_up = Clock::now() + std::chrono::seconds(20);
  while (first_term == 0 && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(5));
  std::thread b([&] {
    second.campaign(
        [&](const Term& term) {
          second_term = term.number();
          while (!term.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        },
        stop_second.get_token());
  });
  const bool waited = second_seen->wait_for("ended", name);
  const bool renewed = recorder_->wait_for("renewed", name);
  resign = true;
  while (second_term == 0 && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(5));
  stop_first.request_stop();
  stop_second.request_stop();
  a.join();
  b.join();
  set_observer(nullptr);
  ASSERT_NE(first_term.load(), 0) << "the first candidate was never elected";
  ASSERT_NE(second_term.load(), 0) << "the second candidate never took over";
  ASSERT_TRUE(waited && renewed) << recorder_->all(name) << "/ " << second_seen->all(name);

  // The first: elected at once, its term begun, renewed, then its term's lease released and the
  // term ended (its work returned); nothing of the second's.
  const auto kinds = recorder_->kinds(name);
  ASSERT_GE(kinds.size(), 6u) << recorder_->all(name);
  EXPECT_EQ(kinds[0], "started");
  EXPECT_EQ(kinds[1], "ended");
  EXPECT_EQ(kinds[2], "term_began");
  EXPECT_EQ(kinds[kinds.size() - 2], "released");
  EXPECT_EQ(kinds.back(), "term_ended");
  for (std::size_t i = 3; i + 2 < kinds.size(); ++i) EXPECT_EQ(kinds[i], "renewed") << i;
  const Seen began = recorder_->of_kind("term_began", name).at(0);
  const Seen resigned = recorder_->of_kind("term_ended", name).at(0);
  EXPECT_EQ(began.token, first_term.load());
  EXPECT_EQ(resigned.token, first_term.load());
  EXPECT_EQ(began.candidate,
            first.candidate().thread.substr(first.candidate().thread.find(':') + 1));
  EXPECT_EQ(resigned.why, TermEnd::kReturned);
  EXPECT_GT(resigned.duration, std::chrono::nanoseconds(0));
  const Seen elected = recorder_->of_kind("ended", name).at(0);
  EXPECT_EQ(elected.outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(elected.strategy, "unique_key");
  EXPECT_EQ(elected.token, first_term.load()) << "the term is the lease's fencing token";
  ASSERT_TRUE(elected.timeout);
  for (const Seen& r : recorder_->of_kind("renewed", name)) {
    EXPECT_EQ(r.token, first_term.load());
    EXPECT_TRUE(r.flag) << "renewed by the renewer";
  }
  const Seen ended = recorder_->of_kind("released", name).at(0);
  EXPECT_EQ(ended.token, first_term.load());
  EXPECT_EQ(ended.released, ReleaseOutcome::kReleased);
  EXPECT_FALSE(ended.flag) << "given back by the campaign, not dropped";
  EXPECT_FALSE(ended.lost);
  EXPECT_TRUE(recorder_->of_kind("lost", name).empty()) << recorder_->all(name);

  // The second: acquisitions that waited out their whole slice while the first led, then its own
  // term's, and that term's release once stopped.
  const auto tries = second_seen->of_kind("ended", name);
  ASSERT_GE(tries.size(), 2u) << second_seen->all(name);
  for (std::size_t i = 0; i + 1 < tries.size(); ++i) {
    EXPECT_EQ(tries[i].outcome, AcquireOutcome::kTimedOut) << i;
    ASSERT_TRUE(tries[i].timeout);
    EXPECT_EQ(*tries[i].timeout, milliseconds(1000)) << "a candidate waits 1 s per acquire";
    EXPECT_GE(tries[i].duration, *tries[i].timeout);
    EXPECT_EQ(tries[i].token, 0);
  }
  EXPECT_EQ(tries.back().outcome, AcquireOutcome::kAcquired);
  EXPECT_EQ(tries.back().token, second_term.load());
  EXPECT_GT(second_term.load(), first_term.load());
  const auto second_released = second_seen->of_kind("released", name);
  ASSERT_EQ(second_released.size(), 1u) << second_seen->all(name);
  EXPECT_EQ(second_released[0].token, second_term.load());
  const auto second_ended = second_seen->of_kind("term_ended", name);
  ASSERT_EQ(second_ended.size(), 1u) << second_seen->all(name);
  EXPECT_EQ(second_ended[0].token, second_term.load());
  EXPECT_EQ(second_ended[0].why, TermEnd::kStopped);
  for (const Seen& s : second_seen->of_kind("renewed", name)) {
    EXPECT_EQ(s.token, second_term.load());
  }
  EXPECT_EQ(recorder_->of_kind("ended", name).size(), 1u) << "the second's tries are its own";

  // The process-wide observer saw both campaigns.
  EXPECT_EQ(global->of_kind("ended", name).size(),
            recorder_->of_kind("ended", name).size() + tries.size());
  EXPECT_EQ(global->of_kind("released", name).size(), 2u);
  EXPECT_EQ(global->of_kind("term_began", name).size(), 2u);
  EXPECT_EQ(global->of_kind("term_ended", name).size(), 2u);
}

// Each way a term ends is told once, after the term's lease was released and before on_revoked,
// with the term's number and why: the work threw, the lease was taken away (an operator's
// release, found by the next renewal), the campaign was stopped.
TEST_P(ObserverTest, EachWayATermEndsIsReportedOnceWithWhy) {
  const std::string name = unique_name("terms");
  std::mutex mu;
  std::vector<std::pair<std::int64_t, TermEnd>> revoked;
  std::vector<std::size_t> events_at_revoke;  // term_ended events seen when on_revoked ran
  ElectionOptions options{.candidate = "only",
                          .ttl = milliseconds(900),
                          .rejoin_after = milliseconds(50),
                          .observer = recorder_,
                          .tables = tables_};
  options.on_error = [](const std::exception&) {};
  options.on_revoked = [&](std::int64_t term, TermEnd why) {
    std::lock_guard lock(mu);
    revoked.emplace_back(term, why);
    events_at_revoke.push_back(recorder_->of_kind("term_ended", name).size());
  };
  Election election(*pool_, name, options);
  std::atomic<int> terms{0};
  std::stop_source stop;
  std::thread campaign([&] {
    election.campaign(
        [&](const Term& term) {
          const int n = ++terms;
          if (n == 1) throw std::runtime_error("the work failed");
          if (n == 2) {
            release_by_operator(name);  // the next renewal finds the lease gone
            while (!term.stop_token().stop_requested()) {
              std::this_thread::sleep_for(milliseconds(5));
            }
            return;
          }
          stop.request_stop();  // the third: the campaign is stopped while it leads
          while (!term.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        },
        stop.get_token());
  });
  campaign.join();
  ASSERT_EQ(terms.load(), 3);

  const auto began = recorder_->of_kind("term_began", name);
  const auto ended = recorder_->of_kind("term_ended", name);
  ASSERT_EQ(began.size(), 3u) << recorder_->all(name);
  ASSERT_EQ(ended.size(), 3u) << recorder_->all(name);
  const std::vector<TermEnd> why{TermEnd::kThrew, TermEnd::kLost, TermEnd::kStopped};
  std::lock_guard lock(mu);
  ASSERT_EQ(revoked.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(began[i].token, ended[i].token) << i;
    EXPECT_EQ(ended[i].token, revoked[i].first) << i;
    EXPECT_EQ(ended[i].why, why[i]) << i << ": " << to_string(ended[i].why);
    EXPECT_EQ(revoked[i].second, why[i]) << i;
    EXPECT_EQ(ended[i].candidate, "only");
    EXPECT_GT(ended[i].duration, std::chrono::nanoseconds(0));
    EXPECT_EQ(events_at_revoke[i], i + 1) << "term_ended comes before on_revoked";
    if (i > 0) {
      EXPECT_GT(began[i].token, began[i - 1].token);
    }
  }
  // The lease of each term was released before its term_ended.
  const auto kinds = recorder_->kinds(name);
  std::size_t terms_ended = 0, released = 0;
  for (const std::string& k : kinds) {
    if (k == "released") ++released;
    if (k == "term_ended") {
      EXPECT_EQ(released, ++terms_ended) << recorder_->all(name);
    }
  }
  EXPECT_EQ(to_string(TermEnd::kLost), "lost");
}

INSTANTIATE_TEST_SUITE_P(Pairs, ObserverTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
