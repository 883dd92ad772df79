// SPDX-License-Identifier: Apache-2.0
// The row lock (SELECT ... FOR UPDATE) against every database x driver pair: NOWAIT tries,
// sub-second timed waits, the holder's connection killed, commit with the release and rollback
// on an exception, reentrancy on one transaction, and rows of the caller's own table. The
// multi-process mutual-exclusion run is in lock_process_test.cpp.
#include "dblock/row_lock.hpp"

#include <atomic>
#include <future>
#include <thread>

#include "backends.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

class RowLockTest : public MigratedLockTest<RowLock, RowLockOptions> {
 protected:
  RowLockTest() : MigratedLockTest("r", 6) {}
  // A table of the test's own: items(id, note), rows 1 and 2.
  std::string make_items() {
    const std::string items = tables_.qualified(backend().dialect, "items");
    auto c = pool_->acquire();
    c->execute("CREATE TABLE " + items + " (id INT PRIMARY KEY, note VARCHAR(50) NOT NULL)");
    c->execute("INSERT INTO " + items + " (id, note) VALUES (1, 'one'), (2, 'two')");
    return items;
  }
  std::int64_t count_notes(const std::string& items, const std::string& note) {
    auto c = backend().connect();
    return c
        ->execute("SELECT COUNT(*) AS n FROM " + items + " WHERE note = " + backend().param(1),
                  {Value(note)})
        .int64_at(0, "n");
  }
};

// A row lock lasts as long as its transaction: the TTL in LockOptions does not end it.
TEST_P(RowLockTest, ALeaseHeldPastItsTtlIsStillHeldAndNotLost) { expect_held_past_its_ttl(); }

TEST_P(RowLockTest, ATryOnAHeldKeyReturnsNotAcquiredWithin50Ms) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  EXPECT_GT(held->fencing_token(), 0);
  ASSERT_NE(held->connection(), nullptr);
  EXPECT_TRUE(held->connection()->in_transaction());
  lock_->try_acquire("warm-up", as("b"));  // the first use of a key creates its row
  expect_a_try_on_the_held_key_fails_at_once("k");
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  auto next = lock_->try_acquire("k", as("b"));
  ASSERT_TRUE(next);
  EXPECT_GT(next->fencing_token(), 0);
}

TEST_P(RowLockTest, ATimedWaitEndsAfterItsTimeout) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  for (milliseconds wait : {milliseconds(300), milliseconds(1300)}) {
    const auto start = Clock::now();
    EXPECT_FALSE(lock_->acquire("k", wait, as("b")));
    const auto took = since(start);
    EXPECT_GE(took, wait - milliseconds(20)) << wait.count();
    EXPECT_LT(took, wait + milliseconds(400)) << wait.count();  // not the next whole second
  }
}

TEST_P(RowLockTest, AWaiterGetsTheLockWhenTheHolderCommits) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  const std::int64_t first = held->fencing_token();
  auto waiter = waiter_for("k");
  std::this_thread::sleep_for(milliseconds(200));
  const auto released = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  EXPECT_GT(waiter.get(), first);
  EXPECT_LT(since(released), milliseconds(1000));
}

TEST_P(RowLockTest, KillingTheHoldersConnectionLetsAWaiterInAtOnce) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  const std::int64_t session = backend().session_id(*held->connection());
  std::atomic<std::int64_t> waited_ms{-1};
  auto waiter = std::async(std::launch::async, [&] {
    const auto start = Clock::now();
    auto lease = lock_->acquire("k", milliseconds(20000), as("b"));
    waited_ms = since(start).count();
    return lease.has_value();
  });
  std::this_thread::sleep_for(milliseconds(300));
  auto killer = backend().connect();
  const auto killed = Clock::now();
  backend().kill_session(*killer, session);
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(since(killed), milliseconds(1000));  // not the 20 s the waiter would allow
  EXPECT_GE(waited_ms.load(), 250);
  // The holder finds out: renew() probes the connection; release() reports the rollback.
  EXPECT_FALSE(held->renew());
  EXPECT_TRUE(held->lost());
  try {
    held->release();
    ADD_FAILURE() << "release on a killed connection returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost);
    EXPECT_NE(std::string(e.what()).find("rolled its transaction back"), std::string::npos)
        << e.what();
  }
}

TEST_P(RowLockTest, AKilledHoldersLeaseIsLostBeforeAWaiterHasTheLock) {
  // The moment a waiter blocked in the server gets the row, the killed holder's lease must
  // already say lost(): otherwise both report holding the key at once. (PostgreSQL sends the
  // killed session its "terminating connection" error, frees its locks, and only then closes the
  // socket.) Checked on the waiter's thread right after its acquire returns, 20 times.
  int still_held = 0;
  for (int i = 0; i < 20; ++i) {
    auto held = lock_->try_acquire("k", as("a"));
    ASSERT_TRUE(held);
    const std::int64_t session = backend().session_id(*held->connection());
    auto waiter = std::async(std::launch::async, [&] {
      auto lease = lock_->acquire("k", milliseconds(20000), as("b"));
      const bool holder_lost = held->lost();
      EXPECT_TRUE(lease);
      return holder_lost;
    });
    std::this_thread::sleep_for(milliseconds(100));
    auto killer = backend().connect();
    backend().kill_session(*killer, session);
    if (!waiter.get()) ++still_held;
    EXPECT_TRUE(held->lost());
  }
  EXPECT_EQ(still_held, 0) << "of 20 killed holders, " << still_held
                           << " still reported holding the key when the waiter had it";
}

TEST_P(RowLockTest, WritesCommitWithTheReleaseAndRollBackWhenTheCriticalSectionThrows) {
  const std::string items = make_items();
  const std::string update =
      "UPDATE " + items + " SET note = " + backend().param(1) + " WHERE id = 1";
  EXPECT_THROW(with_lock(*lock_, "k", milliseconds(1000), as("a"),
                         [&](Lease& lease) {
                           lease.connection()->execute(update, {Value("thrown")});
                           throw std::runtime_error("critical section failed");
                         }),
               std::runtime_error);
  EXPECT_EQ(count_notes(items, "thrown"), 0);
  EXPECT_TRUE(lock_->try_acquire("k", as("b"))) << "the rollback must free the lock";

  auto lease = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(lease);
  lease->connection()->execute(update, {Value("committed")});
  EXPECT_EQ(count_notes(items, "committed"), 0) << "visible before the release";
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(count_notes(items, "committed"), 1);
}

TEST_P(RowLockTest, ReentrantForTheSameOwnerOnOneTransaction) {
  const std::string items = make_items();
  auto outer = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(outer);
  const std::size_t open_before = pool_->open_count();
  auto inner = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->connection(), outer->connection());
  EXPECT_EQ(inner->fencing_token(), outer->fencing_token());
  EXPECT_EQ(pool_->open_count(), open_before);
  inner->connection()->execute(
      "UPDATE " + items + " SET note = " + backend().param(1) + " WHERE id = 1", {Value("x")});
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  EXPECT_FALSE(lock_->try_acquire("k", as("b")));
  EXPECT_EQ(count_notes(items, "x"), 0);
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(count_notes(items, "x"), 1);
  EXPECT_TRUE(lock_->try_acquire("k", as("b")));
}

TEST_P(RowLockTest, AnInnerLeaseDroppedWithoutReleaseRollsTheWholeTransactionBack) {
  const std::string items = make_items();
  auto outer = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(outer);
  outer->connection()->execute(
      "UPDATE " + items + " SET note = " + backend().param(1) + " WHERE id = 1", {Value("y")});
  { auto inner = lock_->try_acquire("k", as("a")); }  // dropped: an exception path
  try {
    outer->release();
    ADD_FAILURE() << "release after an abandoned inner lease returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_EQ(count_notes(items, "y"), 0);
  EXPECT_TRUE(lock_->try_acquire("k", as("b")));
}

TEST_P(RowLockTest, ATimedOutWaitThatRacedTheGrantHoldsNothing) {
  // The holder releases right at the waiter's deadline, again and again; whichever way each
  // race goes, afterwards nobody may hold the key.
  for (int i = 0; i < 10; ++i) {
    auto held = lock_->try_acquire("k", as("a"));
    ASSERT_TRUE(held);
    auto waiter = std::async(std::launch::async, [&] {
      return lock_->acquire("k", milliseconds(200), as("b")).has_value();
    });
    std::this_thread::sleep_for(milliseconds(195 + i));
    held->release();
    waiter.get();  // either outcome; a lease it got is released when the future's value dies
    auto third = lock_->try_acquire("k", as("c"));
    EXPECT_TRUE(third) << "round " << i;
  }
}

TEST_P(RowLockTest, LocksARowOfTheCallersOwnTable) {
  const std::string items = make_items();
  const std::string table = tables_.name("items");
  auto held = lock_->try_acquire_row({table, "id", Value(1)}, as("a"));
  ASSERT_TRUE(held);
  EXPECT_EQ(held->key(), table + ".id=1");
  EXPECT_EQ(held->fencing_token(), 0);
  EXPECT_FALSE(lock_->try_acquire_row({table, "id", Value(1)}, as("b")));
  EXPECT_TRUE(lock_->try_acquire_row({table, "id", Value(2)}, as("b")));
  const auto start = Clock::now();
  EXPECT_FALSE(lock_->acquire_row({table, "id", Value(1)}, milliseconds(300), as("b")));
  EXPECT_LT(since(start), milliseconds(700));
  held->release();
  EXPECT_TRUE(lock_->try_acquire_row({table, "id", Value(1)}, as("b")));

  try {
    lock_->try_acquire_row({table, "id", Value(99)}, as("b"));
    ADD_FAILURE() << "locked a missing row";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("existing row"), std::string::npos) << e.what();
  }
  for (const TableRow& bad :
       {TableRow{"items; DROP TABLE x", "id", Value(1)}, TableRow{table, "id = 1 OR 1", Value(1)},
        TableRow{table, "id", Value()}}) {
    try {
      lock_->try_acquire_row(bad, as("b"));
      ADD_FAILURE() << bad.table << " / " << bad.key_column;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_EQ(count_notes(items, "one"), 1);  // nothing was changed by the rejected calls
}

TEST_P(RowLockTest, FencingTokensIncreaseOverAcquisitions) {
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto lease = lock_->try_acquire("k", as(i % 2 ? "a" : "b"));
    ASSERT_TRUE(lease);
    EXPECT_GT(lease->fencing_token(), last);
    last = lease->fencing_token();
  }
}

TEST_P(RowLockTest, NegativeTimeoutsAndBadKeysAreRejected) {
  EXPECT_THROW(lock_->acquire("k", milliseconds(-1), as("a")), Error);
  EXPECT_THROW(lock_->try_acquire("", as("a")), Error);
  EXPECT_THROW(lock_->try_acquire(std::string(256, 'k'), as("a")), Error);
}

INSTANTIATE_TEST_SUITE_P(Pairs, RowLockTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
