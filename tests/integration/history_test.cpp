// SPDX-License-Identifier: Apache-2.0
// The history of holds (dblock/history.hpp), on every pair: each way a unique-key hold ends
// writes exactly one row, with the tenure's token, owner and acquisition time, the right ending
// and the right time on the database clock (released, force-released, a hand-over, taken over,
// expired, cleaned); a reentrant hold writes one row, a release that finds its lease gone writes
// none, and with history off nothing is written; the lock statements' own answers (tokens,
// counts, claims) stay exact while the triggers write (on MySQL and MariaDB the triggers clear
// the LAST_INSERT_ID() those statements answer with from the reply, and the lock reads it again).
// Also reading, the cleaner's retention, and what enabling says on a database without migration
// 0009.
#include "dblock/history.hpp"

#include <future>
#include <thread>

#include "dblock/cleaner.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

class HistoryTest : public MigratedPoolTest {
 protected:
  HistoryTest() : MigratedPoolTest("h", 4) {}
  void SetUp() override {
    MigratedPoolTest::SetUp();
    enable_history(*pool_->acquire(), tables_);
    lock_ = std::make_unique<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{.tables = tables_});
  }
  void TearDown() override {
    lock_.reset();
    pool_.reset();
    MigratedPoolTest::TearDown();
  }

  std::vector<HistoryRow> history(const std::string& key) {
    return read_history(*pool_->acquire(), tables_, key);
  }
  std::string now() { return database_now(*pool_->acquire()); }
  // The row of `key` as `dblock locks` reads it (held, or expired and not yet cleaned).
  LockRow row(const std::string& key) {
    std::optional<LockRow> r = find_lock(*pool_->acquire(), tables_, key);
    EXPECT_TRUE(r) << "no row of " << key;
    return r.value_or(LockRow{});
  }
  // Checks that `h` is the tenure `r` (as read while it was held) and ended as `how`.
  static void expect_tenure(const HistoryRow& h, const LockRow& r, HoldEnd how) {
    EXPECT_EQ(h.key, r.key);
    EXPECT_EQ(h.fencing_token, r.fencing_token);
    EXPECT_EQ(h.owner_host, r.owner_host);
    EXPECT_EQ(h.owner_process, r.owner_process);
    EXPECT_EQ(h.owner_thread, r.owner_thread);
    EXPECT_EQ(h.acquired_at, r.acquired_at);
    EXPECT_EQ(to_string(h.ended_how), to_string(how));
  }
  // Waits until the row of `key` has expired on the database clock.
  void wait_expired(const std::string& key) {
    for (int i = 0; i < 200 && !row(key).expired; ++i) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(row(key).expired) << key;
  }

  std::unique_ptr<UniqueKeyLock> lock_;
};

TEST_P(HistoryTest, EnableIsIdempotentAndDisableStopsIt) {
  auto c = pool_->acquire();
  EXPECT_TRUE(history_enabled(*c, tables_));
  enable_history(*c, tables_);  // again: no error, still one set of triggers
  EXPECT_TRUE(history_enabled(*c, tables_));
  disable_history(*c, tables_);
  EXPECT_FALSE(history_enabled(*c, tables_));
  disable_history(*c, tables_);
  EXPECT_FALSE(history_enabled(*c, tables_));
  enable_history(*c, tables_);
  EXPECT_TRUE(history_enabled(*c, tables_));
  // One set of triggers: a release writes one row, not two.
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(history("k").size(), 1u);
}

TEST_P(HistoryTest, AHolderReleaseIsReleasedAtTheStatementsTime) {
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  const LockRow held = row("k");
  const std::string before = now();
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  const std::string after = now();
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], held, HoldEnd::kReleased);
  EXPECT_GE(h[0].ended_at, before);  // not the lease's expiry, 30 s ahead
  EXPECT_LE(h[0].ended_at, after);
  EXPECT_TRUE(history("other").empty());
}

TEST_P(HistoryTest, AnOperatorsReleaseIsForceReleasedAndTheHoldersLaterReleaseAddsNothing) {
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  const LockRow held = row("k");
  const std::string before = now();
  release_by_operator("k");
  const std::string after = now();
  EXPECT_EQ(a->release(), ReleaseOutcome::kNotHeld);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], held, HoldEnd::kForceReleased);
  EXPECT_GE(h[0].ended_at, before);
  EXPECT_LE(h[0].ended_at, after);
}

// After an inner release the row carries the holder's release id, as a release_rest (the
// holder's) leaves it: the operator's release is still told apart.
TEST_P(HistoryTest, AnOperatorsReleaseOfAReenteredHoldAfterAnInnerReleaseIsForceReleased) {
  auto outer = lock_->try_acquire("k", as("a"));
  auto inner = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  const LockRow held = row("k");
  ASSERT_EQ(held.hold_count, 1);
  release_by_operator("k");
  EXPECT_EQ(outer->release(), ReleaseOutcome::kNotHeld);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], held, HoldEnd::kForceReleased);
}

TEST_P(HistoryTest, AnotherOwnerTakingAnExpiredLeaseIsTakenOverAtTheExpiry) {
  auto a = lock_->try_acquire("k", as("a", milliseconds(300), false));
  ASSERT_TRUE(a);
  const std::int64_t old_token = a->fencing_token();
  wait_expired("k");
  const LockRow expired = row("k");
  auto b = lock_->try_acquire("k", as("b"));
  ASSERT_TRUE(b);
  // The acquire's answer is the row's token, while the trigger wrote the history.
  EXPECT_EQ(b->fencing_token(), row("k").fencing_token);
  EXPECT_GT(b->fencing_token(), old_token);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], expired, HoldEnd::kTakenOver);
  EXPECT_EQ(h[0].fencing_token, old_token);
  EXPECT_EQ(h[0].ended_at, expired.expires_at);
  EXPECT_EQ(a->release(), ReleaseOutcome::kNotHeld);
  EXPECT_EQ(history("k").size(), 1u);
  const std::int64_t b_token = b->fencing_token();
  EXPECT_EQ(b->release(), ReleaseOutcome::kReleased);
  const auto both = history("k");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].fencing_token, b_token);  // newest first
  EXPECT_EQ(both[0].ended_how, HoldEnd::kReleased);
}

TEST_P(HistoryTest, TheSameOwnerTakingItsExpiredLeaseAgainIsExpired) {
  auto first = lock_->try_acquire("k", as("a", milliseconds(300), false));
  ASSERT_TRUE(first);
  wait_expired("k");
  const LockRow expired = row("k");
  auto second = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(second);
  EXPECT_GT(second->fencing_token(), first->fencing_token());
  EXPECT_EQ(second->fencing_token(), row("k").fencing_token);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], expired, HoldEnd::kExpired);
  EXPECT_EQ(h[0].ended_at, expired.expires_at);
}

TEST_P(HistoryTest, TheCleanerDeletingAnExpiredHoldIsCleanedAndAReleasedRowAddsNothing) {
  auto a = lock_->try_acquire("k", as("a", milliseconds(200), false));
  auto b = lock_->try_acquire("freed", as("b"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->release(), ReleaseOutcome::kReleased);
  wait_expired("k");
  const LockRow expired = row("k");
  CleanOptions options;
  options.grace = milliseconds(0);
  const CleanResult cleaned = clean(*pool_->acquire(), tables_, options);
  EXPECT_EQ(cleaned.tables.at("locks"), 2u);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], expired, HoldEnd::kCleaned);
  EXPECT_EQ(h[0].ended_at, expired.expires_at);
  const auto freed = history("freed");
  ASSERT_EQ(freed.size(), 1u);  // its release, not its deletion
  EXPECT_EQ(freed[0].ended_how, HoldEnd::kReleased);
}

TEST_P(HistoryTest, AReentrantHoldReleasedWritesOneRow) {
  auto one = lock_->try_acquire("k", as("a"));
  auto two = lock_->try_acquire("k", as("a"));
  auto three = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(one && two && three);
  const LockRow held = row("k");
  ASSERT_EQ(held.hold_count, 3);
  EXPECT_EQ(three->release(), ReleaseOutcome::kDecremented);
  EXPECT_EQ(two->release(), ReleaseOutcome::kDecremented);
  EXPECT_TRUE(history("k").empty());
  EXPECT_EQ(one->release(), ReleaseOutcome::kReleased);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  expect_tenure(h[0], held, HoldEnd::kReleased);
}

TEST_P(HistoryTest, AReleaseThatFindsItsLeaseGoneWritesNoReleasedRow) {
  auto a = lock_->try_acquire("k", as("a", milliseconds(300), false));
  ASSERT_TRUE(a);
  const std::int64_t a_token = a->fencing_token();
  wait_expired("k");
  EXPECT_EQ(a->release(), ReleaseOutcome::kNotHeld);
  EXPECT_TRUE(history("k").empty()) << "the lease ran out; nobody released it";
  auto b = lock_->try_acquire("k", as("b"));
  ASSERT_TRUE(b);
  const auto h = history("k");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].ended_how, HoldEnd::kTakenOver);
  EXPECT_EQ(h[0].fencing_token, a_token);
}

// A release that hands the key straight to a waiter of the same lock object (a new token in the
// same statement, the old lease still live) is the holder's release, at its time.
TEST_P(HistoryTest, AReleaseHandedToAWaiterIsReleased) {
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  const LockRow held = row("k");
  auto waiter = std::async(std::launch::async, [&] {
    auto lease = lock_->acquire("k", milliseconds(10000), as("b"));
    return lease ? lease->fencing_token() : std::int64_t{-1};
  });
  std::this_thread::sleep_for(milliseconds(300));  // b asleep in its wait
  const std::int64_t a_token = a->fencing_token();
  const std::string before = now();
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  const std::int64_t b_token = waiter.get();
  const std::string after = now();
  EXPECT_GT(b_token, a_token);
  const auto h = history("k");
  ASSERT_GE(h.size(), 1u);
  const HistoryRow& first = h.back();  // a's tenure; b's ended with its release
  expect_tenure(first, held, HoldEnd::kReleased);
  EXPECT_GE(first.ended_at, before);
  EXPECT_LE(first.ended_at, after);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].fencing_token, b_token);
  EXPECT_EQ(h[0].ended_how, HoldEnd::kReleased);
  // It was a hand-over: an acquire after a release would have kept the release id as the row's
  // previous lease id, a hand-over leaves it as a's acquire left it (none).
  const Result previous = pool_->acquire()->execute(
      "SELECT previous_lease_id AS p FROM " + tables_.qualified(backend().dialect, "locks") +
          " WHERE lock_key = " + backend().param(1),
      {Value("k")});
  ASSERT_EQ(previous.size(), 1u);
  EXPECT_FALSE(previous.at(0, "p")) << "not handed over: " << *previous.at(0, "p");
}

// Two operators enabling at once: both succeed (the second waits for the first's transaction),
// and the triggers exist once.
TEST_P(HistoryTest, TwoEnablesAtOnceBothSucceed) {
  disable_history(*pool_->acquire(), tables_);
  auto enable = [this] {
    auto c = backend().connect();
    enable_history(*c, tables_);
  };
  auto first = std::async(std::launch::async, enable);
  auto second = std::async(std::launch::async, enable);
  EXPECT_NO_THROW(first.get());
  EXPECT_NO_THROW(second.get());
  EXPECT_TRUE(history_enabled(*pool_->acquire(), tables_));
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(history("k").size(), 1u);
}

TEST_P(HistoryTest, WithHistoryOffNothingIsRecorded) {
  disable_history(*pool_->acquire(), tables_);
  auto released = lock_->try_acquire("released", as("a"));
  auto forced = lock_->try_acquire("forced", as("a"));
  auto expired = lock_->try_acquire("expired", as("a", milliseconds(200), false));
  auto cleaned = lock_->try_acquire("cleaned", as("a", milliseconds(200), false));
  ASSERT_TRUE(released && forced && expired && cleaned);
  EXPECT_EQ(released->release(), ReleaseOutcome::kReleased);
  release_by_operator("forced");
  wait_expired("expired");
  wait_expired("cleaned");
  EXPECT_TRUE(lock_->try_acquire("expired", as("b")));
  CleanOptions options;
  options.grace = milliseconds(0);
  clean(*pool_->acquire(), tables_, options);
  for (const char* key : {"released", "forced", "expired", "cleaned"}) {
    EXPECT_TRUE(history(key).empty()) << key;
  }
}

TEST_P(HistoryTest, ReadingBoundsByTimeAndCount) {
  for (int i = 0; i < 3; ++i) {
    auto a = lock_->try_acquire("k", as("a"));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  }
  auto c = pool_->acquire();
  const auto all = read_history(*c, tables_, "k");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_GT(all[0].fencing_token, all[1].fencing_token);
  EXPECT_GT(all[1].fencing_token, all[2].fencing_token);
  const auto newest = read_history(*c, tables_, "k", {.since = std::nullopt, .limit = 2});
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].fencing_token, all[0].fencing_token);
  EXPECT_EQ(read_history(*c, tables_, "k", {.since = std::chrono::hours(1), .limit = 0}).size(),
            3u);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(read_history(*c, tables_, "k", {.since = milliseconds(200), .limit = 0}).empty());
  expect_error([&] { read_history(*c, tables_, "k", {.since = milliseconds(-1), .limit = 0}); },
               ErrorCode::kInvalidArgument, "negative", "read with a negative since");
}

// A claim with history on: its token is the row's (MySQL: read again after a trigger ran), a
// second claim is refused, and a claim is no tenure that ends.
TEST_P(HistoryTest, AClaimAnswersExactlyWhileTheTriggersRun) {
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  const std::int64_t a_token = a->fencing_token();
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);  // the row stays: the claim updates it
  const std::optional<Claim> claim = lock_->claim("k");
  ASSERT_TRUE(claim);
  EXPECT_EQ(claim->fencing_token, row("k").fencing_token);
  EXPECT_GT(claim->fencing_token, a_token);
  EXPECT_FALSE(lock_->claim("k"));
  EXPECT_FALSE(lock_->try_acquire("k", as("b")));
  // A claim under the caller's own id, sent again (as after a lost reply), is reported as ours.
  const std::optional<Claim> mine = lock_->claim("mine", {.claim_id = "order-7"});
  ASSERT_TRUE(mine);
  const std::optional<Claim> again = lock_->claim("mine", {.claim_id = "order-7"});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fencing_token, mine->fencing_token);
  EXPECT_EQ(history("k").size(), 1u);  // a's tenure only
}

INSTANTIATE_TEST_SUITE_P(Pairs, HistoryTest, ::testing::ValuesIn(all_backends()), BackendName());

// The history table on every pair, whether or not its server records holds.
class HistoryTableTest : public MigratedPoolTest {
 protected:
  HistoryTableTest() : MigratedPoolTest("ht", 2) {}
  // A tenure of `key` with `token` that ended `hours_ago` hours before the database clock's now.
  void insert_ended(const std::string& key, std::int64_t token, double hours_ago) {
    const bool pg = backend().dialect == Dialect::kPostgreSQL;
    const auto ms = static_cast<std::int64_t>(hours_ago * 3600 * 1000);
    const std::string ago =
        pg ? "clock_timestamp() - " + backend().param(3) + "::bigint * interval '1 millisecond'"
           : "UTC_TIMESTAMP(6) - INTERVAL " + backend().param(3) + " * 1000 MICROSECOND";
    pool_->acquire()->execute(
        "INSERT INTO " + tables_.qualified(backend().dialect, "history") +
            " (lock_key, fencing_token, owner_host, owner_process, owner_thread, acquired_at,"
            " ended_at, ended_how) VALUES (" +
            backend().param(1) + ", " + backend().param(2) + ", 'h', 'p', 't', " + ago + ", " +
            ago + ", 'released')",
        pg ? std::vector<Value>{Value(key), Value(token), Value(ms)}
           : std::vector<Value>{Value(key), Value(token), Value(ms), Value(ms)});  // ? per use
  }
};

// The cleaner keeps a tenure for the history retention after it ended, whatever the locks'
// grace, and deletes what is older in batches (and only counts it in a dry run).
TEST_P(HistoryTableTest, TheCleanerPrunesRowsOlderThanTheRetentionInBatches) {
  insert_ended("recent", 1, 0.001);
  for (int hours : {23, 47, 48, 49, 50, 51}) insert_ended("old", hours, hours);
  auto c = pool_->acquire();
  CleanOptions options;
  options.grace = milliseconds(0);
  options.history_retention = std::chrono::hours(24);
  options.batch_size = 2;
  options.dry_run = true;
  EXPECT_EQ(clean(*c, tables_, options).tables.at("history"), 5u);
  EXPECT_EQ(read_history(*c, tables_, "old").size(), 6u) << "a dry run deletes nothing";
  options.dry_run = false;
  const CleanResult done = clean(*c, tables_, options);
  EXPECT_EQ(done.tables.at("history"), 5u);
  EXPECT_GE(done.batches, 3u);  // 5 rows, 2 a batch
  const auto kept = read_history(*c, tables_, "old");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].fencing_token, 23);
  EXPECT_EQ(read_history(*c, tables_, "recent").size(), 1u) << "the grace is not the retention";
  options.history_retention = milliseconds(0);
  EXPECT_EQ(clean(*c, tables_, options).tables.at("history"), 2u);
  EXPECT_TRUE(read_history(*c, tables_, "old").empty());
  options.history_retention = milliseconds(-1);
  expect_error([&] { clean(*c, tables_, options); }, ErrorCode::kInvalidArgument,
               "history retention", "cleaned with a negative retention");
}

TEST_P(HistoryTableTest, EnableAndDisableOnEveryServer) {
  auto c = pool_->acquire();
  EXPECT_FALSE(history_enabled(*c, tables_));
  enable_history(*c, tables_);
  EXPECT_TRUE(history_enabled(*c, tables_));
  disable_history(*c, tables_);
  EXPECT_FALSE(history_enabled(*c, tables_));
  EXPECT_TRUE(read_history(*c, tables_, "k").empty());
}

INSTANTIATE_TEST_SUITE_P(Pairs, HistoryTableTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

// Before migration 0009: enabling or reading says what to run.
class HistoryWithoutItsTableTest : public ::testing::TestWithParam<Backend> {
 protected:
  void TearDown() override {
    auto c = GetParam().connect();
    GetParam().drop_tables_with_prefix(*c, tables_.prefix());
  }
  TableNames tables_{unique_name("hm") + "_"};
};

TEST_P(HistoryWithoutItsTableTest, EnableAndReadSayToMigrate) {
  auto conn = GetParam().connect();
  std::vector<Migration> older;
  for (const Migration& m : builtin_migrations(GetParam().dialect)) {
    if (m.name != "history") older.push_back(m);
  }
  Migrator(*conn, tables_, older).up();
  expect_error([&] { enable_history(*conn, tables_); }, ErrorCode::kUndefinedTable,
               "dblock migrate up", "enabled without the history table");
  EXPECT_FALSE(history_enabled(*conn, tables_));
  expect_error([&] { read_history(*conn, tables_, "k"); }, ErrorCode::kUndefinedTable,
               "dblock migrate up", "read without the history table");
}

INSTANTIATE_TEST_SUITE_P(Pairs, HistoryWithoutItsTableTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
