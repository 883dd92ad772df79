// SPDX-License-Identifier: Apache-2.0
// Lease::stop_token against every database x driver pair, from the guarantee's side: the stop
// comes while the key is still ours on the database clock (another owner is refused at that
// moment) and before anyone else can hold it; a lease taken away (an operator's release, a
// killed session) is stopped by the renewal or the watchdog that finds it gone; a renew_if that
// says no lets the key go at its TTL, with the stop before; with_lock and with_locks hand the
// token to the critical section; the strategies without a TTL refuse the options that need one.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// How long a test waits for a stop that must come before it fails.
constexpr milliseconds kPatience{10000};

long long ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

// Waits until `token`'s stop is requested; false after kPatience.
bool stopped_within_patience(const std::stop_token& token) {
  const auto give_up = Clock::now() + kPatience;
  while (!token.stop_requested()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

class StopTokenTest : public MigratedLockTest<UniqueKeyLock, UniqueKeyLockOptions> {
 protected:
  StopTokenTest() : MigratedLockTest("stop", 6) {}
  // Options of `owner` with `ttl`, the stop `margin`, and renewal as `auto_renew` says.
  static LockOptions with_margin(const std::string& owner, milliseconds ttl, milliseconds margin,
                                 bool auto_renew) {
    LockOptions o = as(owner, ttl, auto_renew);
    o.stop_margin = margin;
    return o;
  }
};

// Not renewed, a lease's stop comes TTL - margin after its acquire was sent: the key is still ours
// then (another owner is refused), and only after the whole TTL can another owner take it.
TEST_P(StopTokenTest, TheStopComesTheMarginBeforeTheTtlWhileTheKeyIsStillOurs) {
  const milliseconds ttl(1500), margin(600);
  const auto before = Clock::now();
  auto lease = lock_->try_acquire("job", with_margin("a", ttl, margin, false));
  ASSERT_TRUE(lease);
  const std::stop_token token = lease->stop_token();
  EXPECT_FALSE(token.stop_requested());
  ASSERT_TRUE(stopped_within_patience(token));
  const long long stopped_after = ms_since(before);
  EXPECT_GE(stopped_after, (ttl - margin).count()) << "stopped before TTL - margin";
  EXPECT_LT(stopped_after, ttl.count()) << "stopped after the lease could have expired";
  EXPECT_FALSE(lock_->try_acquire("job", as("b"))) << "the key was free when the stop came";
  EXPECT_FALSE(lease->lost()) << "the stop comes before lost()";

  auto next = lock_->acquire("job", kPatience, as("b"));
  ASSERT_TRUE(next);
  EXPECT_GE(ms_since(before), ttl.count()) << "another owner held the key within the TTL";
  EXPECT_GT(next->fencing_token(), lease->fencing_token());
}

// The same for a semaphore permit, the other kind of lease that expires.
TEST_P(StopTokenTest, APermitsStopComesTheMarginBeforeItsTtl) {
  Semaphore permits(*pool_, 1, SemaphoreOptions{.tables = tables_});
  const milliseconds ttl(1500), margin(600);
  const auto before = Clock::now();
  auto permit = permits.try_acquire("pool", with_margin("a", ttl, margin, false));
  ASSERT_TRUE(permit);
  ASSERT_TRUE(stopped_within_patience(permit->stop_token()));
  const long long stopped_after = ms_since(before);
  EXPECT_GE(stopped_after, (ttl - margin).count());
  EXPECT_LT(stopped_after, ttl.count());
  EXPECT_FALSE(permits.try_acquire("pool", as("b"))) << "the permit was free when the stop came";
}

// Renewed in the background, a lease is not stopped while it is held, and is stopped by the
// renewal that finds it released by an operator, before on_lost is called.
TEST_P(StopTokenTest, ARenewedLeaseIsStoppedOnlyOnceARenewalFindsItGone) {
  std::atomic<bool> stopped_at_on_lost{false};
  std::atomic<bool> on_lost_called{false};
  std::stop_token token;  // set before the first renewal, a third of the TTL in
  LockOptions o = as("a", milliseconds(900));
  o.on_lost = [&](const std::string&) {
    stopped_at_on_lost = token.stop_requested();
    on_lost_called = true;
  };
  auto lease = lock_->try_acquire("job", o);
  ASSERT_TRUE(lease);
  token = lease->stop_token();
  std::atomic<bool> called{false};
  std::stop_callback on_stop(token, [&] { called = true; });
  std::this_thread::sleep_for(milliseconds(2000));  // two TTLs: six renewals
  EXPECT_FALSE(called) << "a lease renewed on time was stopped";

  release_by_operator("job");
  const auto released = Clock::now();
  ASSERT_TRUE(stopped_within_patience(token));
  EXPECT_TRUE(called);
  EXPECT_LT(ms_since(released), 900) << "the next renewal (a third of the TTL) found it gone";
  EXPECT_TRUE(lease->lost());
  // The stop comes first, then on_lost, on the renewer's thread: wait for it (it reads `token`).
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (!on_lost_called && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(on_lost_called) << "on_lost was not called";
  EXPECT_TRUE(stopped_at_on_lost) << "on_lost came before the stop";
}

// renew_if saying no: the renewer lets the lease run out; the stop comes before the key is free.
TEST_P(StopTokenTest, ARenewIfThatSaysNoLetsTheKeyGoAtItsTtlWithTheStopBefore) {
  std::atomic<bool> alive{true};
  LockOptions o = as("a", milliseconds(1200));
  o.renew_if = [&] { return alive.load(); };
  const auto before = Clock::now();
  auto lease = lock_->try_acquire("job", o);
  ASSERT_TRUE(lease);
  std::stop_token token = lease->stop_token();
  std::this_thread::sleep_for(milliseconds(1500));  // past one TTL: renewed while alive
  EXPECT_FALSE(token.stop_requested());
  EXPECT_FALSE(lock_->try_acquire("job", as("b")));

  alive = false;  // the worker is stuck from here on
  const auto stuck = Clock::now();
  ASSERT_TRUE(stopped_within_patience(token));
  const long long stop_ms = ms_since(stuck);
  auto next = lock_->acquire("job", kPatience, as("b"));
  ASSERT_TRUE(next) << "the key of a stuck worker was not given up";
  EXPECT_LT(stop_ms, ms_since(stuck)) << "another owner got the key before the stop";
  EXPECT_LT(ms_since(before), 5000);
  EXPECT_TRUE(lease->lost());
}

// with_lock hands the token to a critical section that takes one: a long loop stops in time, and
// with_lock, the lease having been held throughout, returns its result.
TEST_P(StopTokenTest, WithLockHandsTheTokenToACriticalSectionThatStopsInTime) {
  int rounds = 0;
  auto done = with_lock(*lock_, "job", milliseconds(1000),
                        with_margin("a", milliseconds(1200), milliseconds(500), false),
                        [&](Lease& lease, std::stop_token stop) {
                          EXPECT_EQ(stop.stop_requested(), lease.stop_token().stop_requested());
                          while (!stop.stop_requested()) {
                            ++rounds;
                            std::this_thread::sleep_for(milliseconds(10));
                          }
                          return rounds;
                        });
  ASSERT_TRUE(done) << "not acquired";
  EXPECT_EQ(*done, rounds);
  EXPECT_GT(rounds, 20);
  EXPECT_TRUE(lock_->try_acquire("job", as("b"))) << "with_lock did not release the key";
}

// A set's token follows each of its leases: one key taken away stops work under the set, and
// with_locks then reports the loss.
TEST_P(StopTokenTest, ASetsTokenStopsWhenAnyOfItsLeasesIs) {
  const std::vector<std::string> keys{"from", "to"};
  bool stopped = false;
  expect_error(
      [&] {
        with_locks(*lock_, keys, milliseconds(1000), as("a", milliseconds(900)),
                   [&](LeaseSet&, std::stop_token stop) {
                     EXPECT_FALSE(stop.stop_requested());
                     release_by_operator("to");
                     stopped = stopped_within_patience(stop);
                   });
      },
      ErrorCode::kLeaseLost, "'from'", "with_locks returned for a set with a lost lease");
  EXPECT_TRUE(stopped);
}

// Asked for before each step, a lease's and a set's token read as stopped from the stop deadline
// on, however late the renewer's watchdog runs: the token looks at the lease's clock as it is
// asked for (a process woken from a pause past the deadline asks before the watchdog has run).
// The deadline is at most TTL - margin after the acquire returned; a look at or after that
// moment that finds the token not stopped is work done past the deadline. The watchdog is made
// late here by a slow stop callback of a lease whose deadline comes first.
TEST_P(StopTokenTest, ATokenAskedForAtEachStepIsStoppedFromTheDeadlineOnForALeaseAndASet) {
  const milliseconds ttl(1200), margin(500);
  auto first = lock_->try_acquire("first", with_margin("a", ttl, margin, false));
  ASSERT_TRUE(first);
  std::stop_callback slow(first->stop_token(),
                          [] { std::this_thread::sleep_for(milliseconds(400)); });
  std::this_thread::sleep_for(milliseconds(50));
  const std::vector<std::string> keys{"from", "to"};
  auto set = try_acquire_all(*lock_, keys, with_margin("a", ttl, margin, false));
  const auto set_acquired = Clock::now();
  ASSERT_TRUE(set);
  auto lease = lock_->try_acquire("single", with_margin("a", ttl, margin, false));
  const auto lease_acquired = Clock::now();
  ASSERT_TRUE(lease);
  // Busy: each look takes microseconds, so a watchdog that stops the lease even a little late
  // would show up as looks past the deadline.
  long long set_late = 0, lease_late = 0, set_looks = 0;
  bool set_stopped = false, lease_stopped = false;
  const auto give_up = Clock::now() + kPatience;
  while (!(set_stopped && lease_stopped) && Clock::now() < give_up) {
    const auto now = Clock::now();
    if (!set_stopped) {
      ++set_looks;
      set_stopped = set->stop_token().stop_requested();
      if (!set_stopped && now - set_acquired >= ttl - margin) ++set_late;
    }
    if (!lease_stopped) {
      lease_stopped = lease->stop_token().stop_requested();
      if (!lease_stopped && now - lease_acquired >= ttl - margin) ++lease_late;
    }
  }
  ASSERT_TRUE(set_stopped && lease_stopped) << "not stopped within " << kPatience.count() << " ms";
  EXPECT_EQ(set_late, 0) << "the set's token read as running past its deadline (" << set_looks
                         << " looks)";
  EXPECT_EQ(lease_late, 0) << "the lease's token read as running past its deadline";
  EXPECT_FALSE(lock_->try_acquire("to", as("b"))) << "the set's keys were free at the stop";
}

// A lease of a set given back on its own (through lease(key)) stops the set's token, whether the
// set's token was asked for before or only after.
TEST_P(StopTokenTest, ASetsTokenIsStoppedOnceOneOfItsLeasesWasGivenBack) {
  const std::vector<std::string> keys{"from", "to"};
  auto asked_before = try_acquire_all(*lock_, keys, as("a"));
  ASSERT_TRUE(asked_before);
  const std::stop_token kept = asked_before->stop_token();
  asked_before->lease("to").release();
  EXPECT_TRUE(kept.stop_requested());
  EXPECT_TRUE(asked_before->stop_token().stop_requested());
  asked_before->release();

  auto asked_after = try_acquire_all(*lock_, keys, as("a"));
  ASSERT_TRUE(asked_after);
  asked_after->lease("from").release();
  EXPECT_TRUE(asked_after->stop_token().stop_requested())
      << "a set missing a key it was acquired with still read as running";
}

// A session lock's lease has no TTL: its stop follows its session, seen ended by the watchdog.
TEST_P(StopTokenTest, ASessionLeaseIsStoppedSoonAfterItsSessionIsKilled) {
  auto own = open_pool(backend().url(), {.max_size = 1});
  SessionLock sessions(*own, SessionLockOptions{.tables = tables_});
  auto lease = sessions.try_acquire("job", as("a"));
  ASSERT_TRUE(lease);
  std::int64_t id = 0;
  {
    SessionConnection conn(*lease);
    id = backend().session_id(*conn);
  }
  std::stop_token token = lease->stop_token();
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_FALSE(token.stop_requested());

  auto killer = pool_->acquire();
  backend().kill_session(*killer, id);
  const auto killed = Clock::now();
  ASSERT_TRUE(stopped_within_patience(token));
  EXPECT_LT(ms_since(killed), 2000) << "the watchdog looks every 250 ms";
  EXPECT_TRUE(lease->lost());
}

// A row lock's lease has no TTL and its loss is seen on its own thread only: its armed token is
// left alone by the renewer's threads while the critical section runs statements on the lease's
// connection (ThreadSanitizer runs this), and stops at the commit.
TEST_P(StopTokenTest, ARowLocksTokenStopsAtItsCommitAndIsNotLookedIntoMeanwhile) {
  RowLock rows(*pool_, RowLockOptions{.tables = tables_});
  auto lease = rows.try_acquire("voucher", as("a"));
  ASSERT_TRUE(lease);
  const std::stop_token token = lease->stop_token();
  const auto until = Clock::now() + milliseconds(1200);  // past a look of the watchdog's
  while (Clock::now() < until) {
    lease->connection()->execute("SELECT 1");
    EXPECT_FALSE(token.stop_requested());
  }
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(token.stop_requested());
}

// Release stops the token, and a handle whose stop is asked for later gets one already stopped.
TEST_P(StopTokenTest, AReleaseRequestsTheStop) {
  auto lease = lock_->try_acquire("job", as("a"));
  ASSERT_TRUE(lease);
  std::stop_token token = lease->stop_token();
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(token.stop_requested());
  expect_error([&] { (void)lease->stop_token(); }, ErrorCode::kInvalidArgument, "empty",
               "an empty handle gave a stop token");
}

// Bad options are refused before anything is sent: a margin outside [0, TTL), renew_if without
// auto_renew, and either on the strategies whose leases do not expire.
TEST_P(StopTokenTest, OptionsThatCannotApplyAreRefusedBeforeAnythingIsSent) {
  for (const milliseconds margin : {milliseconds(-1), milliseconds(1000), milliseconds(5000)}) {
    expect_error(
        [&] { lock_->try_acquire("job", with_margin("a", milliseconds(1000), margin, true)); },
        ErrorCode::kInvalidArgument, "shorter than the TTL", "a bad margin was taken");
  }
  LockOptions gated = as("a", milliseconds(1000), false);
  gated.renew_if = [] { return true; };
  expect_error([&] { lock_->try_acquire("job", gated); }, ErrorCode::kInvalidArgument, "auto_renew",
               "renew_if without auto_renew was taken");

  RowLock rows(*pool_, RowLockOptions{.tables = tables_});
  OptimisticLock versions(*pool_, OptimisticLockOptions{.tables = tables_});
  SessionLock sessions(*pool_, SessionLockOptions{.tables = tables_});
  LockOptions margin_only = as("a");
  margin_only.stop_margin = milliseconds(100);
  LockOptions renew_if_only = as("a");
  renew_if_only.renew_if = [] { return true; };
  for (Lock* lock : std::vector<Lock*>{&rows, &versions, &sessions}) {
    for (const LockOptions& o : {margin_only, renew_if_only}) {
      expect_error([&] { lock->try_acquire("job", o); }, ErrorCode::kInvalidArgument,
                   o.stop_margin ? "stop_margin" : "renew_if",
                   "a strategy without a TTL took an option that needs one");
    }
  }
  auto c = pool_->acquire();
  EXPECT_TRUE(list_locks(*c, tables_).empty());
}

INSTANTIATE_TEST_SUITE_P(Pairs, StopTokenTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
