// SPDX-License-Identifier: Apache-2.0
// LockOptions::lock_delay against every database x driver pair: a lease that ended without a
// release (its holder killed, paused, or gone quiet) keeps its key, permit slot or writer's slot
// taken for the delay after its TTL, on the database clock; its holder cannot renew, release or
// otherwise cut the delay short once its TTL ran out; a release in time frees the key at once;
// the cleaner keeps the row; the strategies a delay cannot apply to refuse it. The killed and
// paused holders run tests/integration/lock_worker.cpp.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kTtl{1000};

class LockDelayTest : public MigratedPoolTest {
 protected:
  LockDelayTest() : MigratedPoolTest("ld", 4) {}
  void SetUp() override {
    MigratedPoolTest::SetUp();
    url_ = std::getenv(backend().url_env.c_str());
    url_ += (url_.find('?') == std::string::npos ? "?" : "&") + std::string("driver=") +
            backend().driver;
    lock_ = std::make_unique<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{.tables = tables_});
  }
  void TearDown() override {
    lock_.reset();
    MigratedPoolTest::TearDown();
  }
  // A holder in another process: lock_worker hold, with `delay` as its lock_delay.
  ChildProcess holder(const std::string& key, milliseconds delay) const {
    return ChildProcess({DBLOCK_LOCK_WORKER_PATH, "hold", url_, tables_.prefix(), key,
                         std::to_string(kTtl.count()), std::to_string(delay.count())},
                        {});
  }
  // Options of owner `owner` with the test's TTL, `delay`, and no renewal: a lease that stops
  // being renewed, as its holder's would when it hangs.
  static LockOptions quiet(const std::string& owner, milliseconds delay) {
    LockOptions o = as(owner, kTtl, false);
    o.lock_delay = delay;
    return o;
  }
  static void sleep_until(Clock::time_point t) { std::this_thread::sleep_until(t); }
  static long long ms_since(Clock::time_point t) {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
  }

  std::string url_;
  std::unique_ptr<UniqueKeyLock> lock_;
};

// The holder is killed (SIGKILL: no release) as soon as it has the key, before any renewal, so its
// row expires TTL + delay after the kill, less the moment between its acquire and the kill.
// Without a delay the key is free a TTL after the kill (the same run with delay 0); with one,
// still taken then, and taken by another owner only once the delay ran out too.
TEST_P(LockDelayTest, AKilledHoldersKeyStaysTakenForTheDelayAfterItsTtl) {
  for (const milliseconds delay : {milliseconds(0), milliseconds(1500)}) {
    const std::string key = "job-" + std::to_string(delay.count());
    ChildProcess worker = holder(key, delay);
    ASSERT_TRUE(worker.wait_for_output("token ", milliseconds(10000))) << worker.output_so_far();
    EXPECT_FALSE(lock_->try_acquire(key, as("other")));
    worker.signal(SIGKILL);
    const auto killed_at = Clock::now();
    worker.wait();
    sleep_until(killed_at + kTtl + milliseconds(250));  // past the TTL of any renewal
    std::optional<Lease> early = lock_->try_acquire(key, as("other"));
    if (delay.count() == 0) {
      EXPECT_TRUE(early) << "without a lock delay the key is free a TTL after the kill";
      continue;
    }
    EXPECT_FALSE(early) << "the key came free at the TTL, before its lock delay ran out";
    auto lease = lock_->acquire(key, milliseconds(10000), as("other"));
    const long long took = ms_since(killed_at);
    ASSERT_TRUE(lease) << "the key never came free after its lock delay";
    EXPECT_GE(took, (kTtl + delay - milliseconds(300)).count())
        << "taken " << took << " ms after the kill";
    EXPECT_LE(took, (kTtl + delay + milliseconds(750)).count())
        << "taken " << took << " ms after the kill";
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  }
}

// The holder is paused (SIGSTOP) past its TTL, then resumes: its renewal and its release find
// the lease lost, and change nothing: the key stays taken, by no one, until the delay ran out.
TEST_P(LockDelayTest, APausedHolderCannotRenewOrReleaseItsKeyFreeDuringTheDelay) {
  constexpr milliseconds kDelay{2500};
  ChildProcess worker = holder("job", kDelay);
  ASSERT_TRUE(worker.wait_for_output("token ", milliseconds(10000))) << worker.output_so_far();
  worker.signal(SIGSTOP);
  const auto stopped_at = Clock::now();
  sleep_until(stopped_at + kTtl + milliseconds(250));
  EXPECT_FALSE(lock_->try_acquire("job", as("other")));
  worker.signal(SIGCONT);
  worker.signal(SIGUSR1);
  auto r = worker.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("renew=0 release=not_held lost=1"), std::string::npos) << r.out;
  // Stopped as soon as it had the key, it expires TTL + delay after the stop (less the moment
  // between its acquire and the stop): still taken here.
  const bool taken = !lock_->try_acquire("job", as("other"));
  ASSERT_LT(ms_since(stopped_at), (kTtl + kDelay - milliseconds(300)).count())
      << "the holder took too long to wake up: the test proves nothing";
  EXPECT_TRUE(taken)
      << "the paused holder's late renewal or release freed the key during its delay";
  auto lease = lock_->acquire("job", milliseconds(10000), as("other"));
  ASSERT_TRUE(lease);
  EXPECT_GE(ms_since(stopped_at), (kTtl + kDelay - milliseconds(300)).count());
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

// The owner of a lease that lapsed (its TTL ran out unrenewed) asks for the key again during the
// delay, through a lock that waits unfairly and one that waits fairly: re-entering the lapsed
// hold would hand the old tenure's fencing token to the new one (a paused writer and the new
// holder writing under one token), so the key stays taken, for its owner too, until the delay
// ran out; then the owner takes it afresh, with a token above the old one.
TEST_P(LockDelayTest, ALapsedHoldsOwnerCannotReenterItDuringTheDelay) {
  constexpr milliseconds kDelay{2000};
  UniqueKeyLock fair(*pool_, UniqueKeyLockOptions{.tables = tables_, .fair = true});
  for (Lock* lock : {static_cast<Lock*>(lock_.get()), static_cast<Lock*>(&fair)}) {
    const std::string key = lock == &fair ? "fair-job" : "job";
    const LockOptions o = quiet("w", kDelay);
    auto lapsed = lock->try_acquire(key, o);
    ASSERT_TRUE(lapsed);
    const std::int64_t token = lapsed->fencing_token();
    const auto acquired_at = Clock::now();
    sleep_until(acquired_at + kTtl + milliseconds(300));
    ASSERT_TRUE(lapsed->lost());
    auto again = lock->try_acquire(key, o);
    ASSERT_LT(ms_since(acquired_at), (kTtl + kDelay - milliseconds(300)).count())
        << "the try came too late: the test proves nothing";
    EXPECT_FALSE(again) << key << ": the owner re-entered its lapsed hold during the delay, token "
                        << again->fencing_token() << " (the lapsed lease's: " << token << ")";
    again.reset();
    auto next = lock->acquire(key, milliseconds(10000), o);
    ASSERT_TRUE(next);
    EXPECT_GE(ms_since(acquired_at), (kTtl + kDelay - milliseconds(300)).count()) << key;
    EXPECT_GT(next->fencing_token(), token) << key;
    EXPECT_EQ(next->release(), ReleaseOutcome::kReleased);
  }
}

// A release in time frees the key at once, the delay notwithstanding: a clean end has no writes
// left in flight.
TEST_P(LockDelayTest, AReleaseInTimeFreesTheKeyAtOnce) {
  LockOptions o = as("job");
  o.lock_delay = std::chrono::minutes(10);
  auto lease = lock_->try_acquire("k", o);
  ASSERT_TRUE(lease);
  EXPECT_TRUE(lease->renew());
  EXPECT_FALSE(lock_->try_acquire("k", as("other")));
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  auto next = lock_->try_acquire("k", as("other"));
  EXPECT_TRUE(next) << "a clean release left the key taken for its lock delay";
}

// A lease that is no longer renewed keeps its key for the delay after its TTL; the cleaner with
// no grace keeps its row meanwhile, the lease's own renewal and release find it lost and leave
// the key taken, and then another owner gets it.
TEST_P(LockDelayTest, TheCleanerAndTheLapsedHolderLeaveTheKeyTakenForTheDelay) {
  constexpr milliseconds kDelay{1500};
  const auto asked = Clock::now();
  auto stale = lock_->try_acquire("k", quiet("job", kDelay));
  ASSERT_TRUE(stale);
  sleep_until(asked + kTtl + milliseconds(250));
  EXPECT_TRUE(stale->lost());  // its own view counts the TTL alone
  CleanOptions no_grace;
  no_grace.grace = milliseconds(0);
  {
    auto c = pool_->acquire();
    const CleanResult cleaned = clean(*c, tables_, no_grace);
    EXPECT_EQ(cleaned.deleted, 0u) << "the cleaner deleted a row inside its lock delay";
    EXPECT_EQ(list_locks(*c, tables_).size(), 1u);
  }
  EXPECT_FALSE(lock_->try_acquire("k", as("other")));
  EXPECT_FALSE(stale->renew()) << "a renewal after the TTL revived the lease";
  EXPECT_EQ(stale->release(), ReleaseOutcome::kNotHeld);
  EXPECT_FALSE(lock_->try_acquire("k", as("other"))) << "a late release cut the delay short";
  auto next = lock_->acquire("k", milliseconds(10000), as("other"));
  ASSERT_TRUE(next);
  EXPECT_GE(ms_since(asked), (kTtl + kDelay).count());
  EXPECT_GT(next->fencing_token(), 0);
}

// A semaphore permit keeps its slot for the delay after its TTL.
TEST_P(LockDelayTest, ALapsedPermitKeepsItsSlotForTheDelay) {
  constexpr milliseconds kDelay{1500};
  Semaphore one(*pool_, 1, SemaphoreOptions{.tables = tables_});
  const auto asked = Clock::now();
  auto stale = one.try_acquire("s", quiet("job", kDelay));
  ASSERT_TRUE(stale);
  sleep_until(asked + kTtl + milliseconds(250));
  EXPECT_FALSE(one.try_acquire("s", as("other"))) << "the slot came free at the TTL";
  EXPECT_FALSE(stale->renew());
  EXPECT_EQ(stale->release(), ReleaseOutcome::kNotHeld);
  EXPECT_FALSE(one.try_acquire("s", as("other"))) << "a late release cut the delay short";
  auto next = one.acquire("s", milliseconds(10000), as("other"));
  ASSERT_TRUE(next);
  EXPECT_GE(ms_since(asked), (kTtl + kDelay).count());
  EXPECT_EQ(next->release(), ReleaseOutcome::kReleased);
  // Released in time, a permit's slot is free at once.
  auto kept = one.try_acquire("s", quiet("job", std::chrono::minutes(10)));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(one.try_acquire("s", as("other")));
}

// A reader-writer lock's writer keeps the readers out for the delay after its TTL.
TEST_P(LockDelayTest, ALapsedWriterKeepsReadersOutForTheDelay) {
  constexpr milliseconds kDelay{1500};
  ReadWriteLock rw(*pool_, ReadWriteLockOptions{.tables = tables_, .max_readers = 2});
  const auto asked = Clock::now();
  auto stale = rw.writer().try_acquire("rw", quiet("job", kDelay));
  ASSERT_TRUE(stale);
  sleep_until(asked + kTtl + milliseconds(250));
  EXPECT_FALSE(rw.reader().try_acquire("rw", as("other"))) << "readers came in at the TTL";
  auto read = rw.reader().acquire("rw", milliseconds(10000), as("other"));
  ASSERT_TRUE(read);
  EXPECT_GE(ms_since(asked), (kTtl + kDelay).count());
  EXPECT_EQ(read->release(), ReleaseOutcome::kReleased);
}

// Out of range, or for a strategy whose holds end with their transaction or session: refused
// before anything is sent, naming the option.
TEST_P(LockDelayTest, ABadOrInapplicableLockDelayIsRefused) {
  Semaphore sem(*pool_, 2, SemaphoreOptions{.tables = tables_});
  for (const milliseconds bad :
       {milliseconds(-1), milliseconds(std::chrono::hours(1)) + milliseconds(1)}) {
    LockOptions o = as("a");
    o.lock_delay = bad;
    for (Lock* lock : std::vector<Lock*>{lock_.get(), &sem}) {
      try {
        lock->try_acquire("k", o);
        ADD_FAILURE() << "lock_delay " << bad.count() << " ms was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(std::string(e.what()).find("lock_delay"), std::string::npos) << e.what();
      }
    }
  }
  RowLock rows(*pool_, RowLockOptions{.tables = tables_});
  OptimisticLock versions(*pool_, OptimisticLockOptions{.tables = tables_});
  SessionLock sessions(*pool_, SessionLockOptions{.tables = tables_});
  LockOptions delayed = as("a");
  delayed.lock_delay = milliseconds(1000);
  for (Lock* lock : std::vector<Lock*>{&rows, &versions, &sessions}) {
    try {
      lock->try_acquire("k", delayed);
      ADD_FAILURE() << "a strategy without a lease row accepted a lock_delay";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("lock_delay"), std::string::npos) << e.what();
    }
  }
  auto c = pool_->acquire();
  EXPECT_TRUE(list_locks(*c, tables_).empty());
}

INSTANTIATE_TEST_SUITE_P(Pairs, LockDelayTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
