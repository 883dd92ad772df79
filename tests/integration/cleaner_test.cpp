// SPDX-License-Identifier: Apache-2.0
// The cleaner against every database x driver pair: what it deletes and keeps (grace, live rows,
// claims, held leases), batch and budget bounds, dry runs, two cleaners at once, and a row
// renewed by an open transaction while the cleaner runs.
#include "dblock/cleaner.hpp"

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "lock_rows.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

class CleanerTest : public MigratedTablesTest {
 protected:
  static CleanOptions no_grace(std::uint64_t batch = 1000) {
    CleanOptions o;
    o.grace = 0ms;
    o.batch_size = batch;
    return o;
  }
  std::uint64_t rows(const std::string& stem = "") {
    return count_lock_rows(*conn_, tables_, stem);
  }
};

TEST_P(CleanerTest, DeletesRowsPastTheGraceAndKeepsTheRest) {
  insert_lock_rows(*conn_, tables_, "old", 20, -3600);             // expired an hour ago
  insert_lock_rows(*conn_, tables_, "recent", 5, -10);             // expired, inside the 5m grace
  insert_lock_rows(*conn_, tables_, "live", 7, 3600);              // held for another hour
  insert_lock_rows(*conn_, tables_, "claimraw", 3, std::nullopt);  // claims never expire
  auto pool = open_pool(backend().url(), {.max_size = 2});
  UniqueKeyLock locks(*pool, {.tables = tables_});
  ASSERT_TRUE(locks.claim("claimed"));
  auto held = locks.try_acquire("held");
  ASSERT_TRUE(held);
  locks.try_acquire("released")->release();  // freed now: inside the grace

  CleanResult r = clean(*conn_, tables_);  // default grace: 5 minutes
  EXPECT_EQ(r.deleted, 20u);
  EXPECT_EQ(r.tables.at("locks"), 20u);
  EXPECT_EQ(r.batches, 7u);  // one per table: locks, row_locks, versions, lock_waiters,
                             // semaphore_permits, semaphores, history
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.dry_run);
  EXPECT_EQ(rows("old"), 0u);
  EXPECT_EQ(rows(), 5u + 7u + 3u + 3u);
  ASSERT_TRUE(r.oldest_expiry_left);  // the rows inside the grace
  EXPECT_EQ(r.oldest_expiry_left->size(), 27u) << *r.oldest_expiry_left;
  EXPECT_EQ(r.oldest_expiry_left->back(), 'Z');

  CleanResult none = clean(*conn_, tables_, no_grace());
  EXPECT_EQ(none.deleted, 6u);  // recent + released
  EXPECT_EQ(rows(), 7u + 3u + 2u);
  EXPECT_EQ(rows("live"), 7u);
  EXPECT_EQ(rows("claim"), 4u);
  EXPECT_EQ(rows("held"), 1u);
  EXPECT_FALSE(none.oldest_expiry_left) << *none.oldest_expiry_left;
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);

  // A key the cleaner deleted is acquired again with a larger fencing token.
  insert_lock_rows(*conn_, tables_, "again", 1, -3600);
  EXPECT_EQ(clean(*conn_, tables_).deleted, 1u);
  auto again = locks.try_acquire("again1");
  ASSERT_TRUE(again);
  EXPECT_GT(again->fencing_token(), 1);
}

TEST_P(CleanerTest, DeletesRowLockAndVersionRowsUnusedForLongerThanTheGrace) {
  auto pool = open_pool(backend().url(), {.max_size = 4});
  RowLock row_locks(*pool, {.tables = tables_});
  OptimisticLock versions(*pool, {.tables = tables_});
  for (const char* key : {"a", "b", "c"}) {
    row_locks.try_acquire(key)->release();
    versions.try_acquire(key)->release();
  }
  auto held = row_locks.try_acquire("held");  // a row lock held now is never deleted
  ASSERT_TRUE(held);
  CleanResult kept = clean(*conn_, tables_);  // all used within the 5 minute grace
  EXPECT_EQ(kept.tables.at("row_locks"), 0u);
  EXPECT_EQ(kept.tables.at("versions"), 0u);
  std::this_thread::sleep_for(10ms);
  CleanOptions o = no_grace();
  if (backend().dialect == Dialect::kMySQL) held.reset();  // InnoDB's DELETE would wait for it
  CleanResult r = clean(*conn_, tables_, o);
  EXPECT_EQ(r.tables.at("versions"), 3u);
  EXPECT_EQ(r.tables.at("row_locks"), backend().dialect == Dialect::kMySQL ? 4u : 3u);
  // The keys work as before: their rows are created again on use.
  auto again = row_locks.try_acquire("a");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
  auto v = versions.try_acquire("a");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->release(), ReleaseOutcome::kReleased);
  if (held) {
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  }
}

TEST_P(CleanerTest, GraceIsMeasuredOnTheDatabaseClock) {
  insert_lock_rows(*conn_, tables_, "a", 4, -30);
  CleanOptions o = no_grace();
  o.grace = 1min;
  EXPECT_EQ(clean(*conn_, tables_, o).deleted, 0u);
  o.grace = 20s;
  EXPECT_EQ(clean(*conn_, tables_, o).deleted, 4u);
}

TEST_P(CleanerTest, DeletesInBoundedBatches) {
  insert_lock_rows(*conn_, tables_, "x", 35, -3600);
  int calls = 0;
  CleanOptions o = no_grace(10);
  o.on_batch = [&](const CleanProgress& p) {
    ++calls;
    EXPECT_EQ(p.batches, static_cast<std::uint64_t>(calls));
    EXPECT_EQ(p.deleted, std::min<std::uint64_t>(35, 10u * p.batches));  // locks come first
  };
  CleanResult r = clean(*conn_, tables_, o);
  EXPECT_EQ(r.deleted, 35u);
  EXPECT_EQ(r.batches, 10u);  // 4 for the locks, 1 each for the other (empty) tables
  EXPECT_EQ(calls, 10);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(rows(), 0u);
}

TEST_P(CleanerTest, MaxRowsLimitsARun) {
  insert_lock_rows(*conn_, tables_, "x", 35, -3600);
  CleanOptions o = no_grace(10);
  o.max_rows = 25;
  CleanResult r = clean(*conn_, tables_, o);
  EXPECT_EQ(r.deleted, 25u);
  EXPECT_EQ(r.batches, 3u);  // 10 + 10 + 5
  EXPECT_FALSE(r.complete);
  EXPECT_TRUE(r.oldest_expiry_left);
  EXPECT_EQ(rows(), 10u);
  CleanResult rest = clean(*conn_, tables_, o);
  EXPECT_EQ(rest.deleted, 10u);
  EXPECT_EQ(rows(), 0u);
}

TEST_P(CleanerTest, MaxTimeAndStopEndARunBetweenBatches) {
  insert_lock_rows(*conn_, tables_, "x", 30, -3600);
  CleanOptions o = no_grace(10);
  o.pause = 300ms;
  o.max_time = 100ms;
  CleanResult r = clean(*conn_, tables_, o);
  EXPECT_EQ(r.batches, 1u);  // the pause runs past the time budget
  EXPECT_EQ(r.deleted, 10u);
  EXPECT_FALSE(r.complete);

  std::atomic<bool> stop{true};
  o.max_time = 0ms;
  o.stop = &stop;
  CleanResult stopped = clean(*conn_, tables_, o);
  EXPECT_EQ(stopped.batches, 0u);
  EXPECT_FALSE(stopped.complete);
  EXPECT_EQ(rows(), 20u);
}

TEST_P(CleanerTest, DryRunCountsAndDeletesNothing) {
  insert_lock_rows(*conn_, tables_, "x", 35, -3600);
  insert_lock_rows(*conn_, tables_, "live", 3, 3600);
  CleanOptions o = no_grace(10);
  o.dry_run = true;
  CleanResult r = clean(*conn_, tables_, o);
  EXPECT_TRUE(r.dry_run);
  EXPECT_EQ(r.deleted, 35u);
  EXPECT_EQ(r.tables.at("locks"), 35u);
  EXPECT_EQ(r.batches, 0u);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.oldest_expiry_left);
  o.max_rows = 20;
  CleanResult bounded = clean(*conn_, tables_, o);
  EXPECT_EQ(bounded.deleted, 20u);
  EXPECT_FALSE(bounded.complete);
  EXPECT_EQ(rows(), 38u);
}

TEST_P(CleanerTest, TwoCleanersAtOnceBothSucceedAndCountEachRowOnce) {
  constexpr std::uint64_t kExpired = 3000;
  insert_lock_rows(*conn_, tables_, "x", kExpired, -3600);
  insert_lock_rows(*conn_, tables_, "live", 50, 3600);
  std::atomic<int> ready{0};
  CleanResult results[2];
  std::string errors[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i) {
    threads[i] = std::thread([&, i] {
      try {
        auto c = backend().connect();
        ready.fetch_add(1);
        while (ready.load() < 2) std::this_thread::yield();
        results[i] = clean(*c, tables_, no_grace(50));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(results[0].deleted + results[1].deleted, kExpired)
      << results[0].deleted << " + " << results[1].deleted;
  EXPECT_EQ(rows("x"), 0u);
  EXPECT_EQ(rows("live"), 50u);
}

TEST_P(CleanerTest, ARowRenewedWhileTheCleanerRunsSurvives) {
  insert_lock_rows(*conn_, tables_, "x", 5, -3600);
  insert_lock_rows(*conn_, tables_, "renewed", 1, -3600);
  // Another session renews the expired row and holds its transaction open while the cleaner
  // runs: PostgreSQL's cleaner skips the locked row; MySQL's DELETE waits for it, then
  // re-checks expiry on the committed renewal. Either way the row must survive.
  auto renewer = backend().connect();
  const Dialect d = renewer->dialect();
  const std::string renew =
      d == Dialect::kPostgreSQL
          ? "UPDATE " + tables_.qualified(d, "locks") +
                " SET expires_at = clock_timestamp() + interval '1 hour' WHERE lock_key = $1"
          : "UPDATE " + tables_.qualified(d, "locks") +
                " SET expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE lock_key = ?";
  renewer->begin();
  ASSERT_EQ(renewer->execute(renew, {"renewed1"}).affected_rows(), 1u);

  CleanResult result;
  std::string error;
  std::thread cleaner([&] {
    try {
      auto c = backend().connect();
      result = clean(*c, tables_, no_grace());
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(500ms);
  renewer->commit();
  cleaner.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(result.deleted, 5u);
  if (d == Dialect::kMySQL) {
    // The DELETE really waited for the renewal, then re-checked the committed row.
    EXPECT_GE(result.duration, 400ms);
  }
  EXPECT_EQ(rows("renewed"), 1u);
  EXPECT_EQ(clean(*conn_, tables_, no_grace()).deleted, 0u);  // live now
  EXPECT_EQ(rows("renewed"), 1u);
}

TEST_P(CleanerTest, MissingTableSaysToMigrate) {
  try {
    clean(*conn_, TableNames(unique_name("missing") + "_"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUndefinedTable) << e.what();
    EXPECT_NE(std::string(e.what()).find("dblock migrate up"), std::string::npos) << e.what();
  }
}

TEST_P(CleanerTest, RefusesToRunInsideATransactionOrWithBadOptions) {
  conn_->begin();
  EXPECT_THROW(clean(*conn_, tables_), Error);
  conn_->rollback();
  CleanOptions o;
  o.batch_size = 0;
  EXPECT_THROW(clean(*conn_, tables_, o), Error);
  o = CleanOptions();
  o.grace = -1s;
  EXPECT_THROW(clean(*conn_, tables_, o), Error);
}

INSTANTIATE_TEST_SUITE_P(Pairs, CleanerTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
