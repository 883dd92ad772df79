// SPDX-License-Identifier: Apache-2.0
// The optimistic strategy and the compare-and-set helpers against every database x driver
// pair: lost updates, conflicts and their retries, rollback on an exception, no ABA after a
// version row is deleted and created again, and predicate / versioned updates of the caller's
// own table (matched, not changed, rows count).
#include "dblock/optimistic_lock.hpp"

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "dblock/conditional_update.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

class OptimisticLockTest : public MigratedPoolTest {
 protected:
  OptimisticLockTest() : MigratedPoolTest("o", 10) {}
  void SetUp() override {
    MigratedPoolTest::SetUp();
    counter_ = tables_.qualified(backend().dialect, "counter");
    auto c = pool_->acquire();
    c->execute("CREATE TABLE " + counter_ +
               " (id INT PRIMARY KEY, n BIGINT NOT NULL, version BIGINT NOT NULL)");
    c->execute("INSERT INTO " + counter_ + " (id, n, version) VALUES (1, 0, 0), (2, 0, 0)");
  }
  std::unique_ptr<OptimisticLock> make_lock(int max_attempts = 10) {
    OptimisticLockOptions o;
    o.tables = tables_;
    o.retry.max_attempts = max_attempts;
    return std::make_unique<OptimisticLock>(*pool_, o);
  }
  std::int64_t read_n(Connection& c, int id = 1) {
    return c.execute("SELECT n FROM " + counter_ + " WHERE id = " + std::to_string(id))
        .int64_at(0, "n");
  }
  void write_n(Connection& c, std::int64_t n, int id = 1) {
    c.execute("UPDATE " + counter_ + " SET n = " + backend().param(1) +
                  " WHERE id = " + std::to_string(id),
              {Value(n)});
  }
  std::int64_t committed_n(int id = 1) {
    auto c = backend().connect();
    return read_n(*c, id);
  }

  std::string counter_;
};

TEST_P(OptimisticLockTest, NoLostUpdatesTheCounterEqualsTheCommits) {
  auto lock = make_lock(1000);
  constexpr int kThreads = 8, kEach = 25;
  std::atomic<int> commits{0}, conflicts{0}, gave_up{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        LockAttempts tries;
        auto done = with_lock(
            *lock, "counter", milliseconds(0), {},
            [&](Lease& lease) {
              const std::int64_t n = read_n(*lease.connection());  // read ...
              std::this_thread::sleep_for(milliseconds(1));        // ... others write ...
              write_n(*lease.connection(), n + 1);                 // ... write what we read + 1
            },
            &tries);
        conflicts += tries.conflicts;
        if (done) {
          ++commits;
        } else {
          ++gave_up;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(committed_n(), commits.load());
  EXPECT_GT(commits.load(), 0);
  EXPECT_EQ(commits.load() + gave_up.load(), kThreads * kEach);
  RecordProperty("conflicts", conflicts.load());
  std::printf("commits=%d conflicts=%d gave_up=%d\n", commits.load(), conflicts.load(),
              gave_up.load());
}

TEST_P(OptimisticLockTest, TheSecondOfTwoOverlappingWritersConflictsAndIsRolledBack) {
  auto lock = make_lock();
  auto a = lock->try_acquire("k", as("a"));
  auto b = lock->try_acquire("k", as("b"));  // never waits: optimistic leases do not exclude
  ASSERT_TRUE(a && b);
  const std::int64_t read = a->fencing_token();
  EXPECT_EQ(b->fencing_token(), read);  // the version both read
  write_n(*a->connection(), 10, 1);
  write_n(*b->connection(), 20, 2);
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(b->release(), ReleaseOutcome::kConflict);
  EXPECT_EQ(committed_n(1), 10);
  EXPECT_EQ(committed_n(2), 0);
  auto c = lock->try_acquire("k", as("c"));
  ASSERT_TRUE(c);
  EXPECT_GT(c->fencing_token(), read);  // the version a's commit wrote
}

// An optimistic lease has no TTL: one kept past LockOptions::ttl is not lost and still commits.
TEST_P(OptimisticLockTest, ALeaseKeptPastItsTtlIsNotLostAndCommits) {
  auto lock = make_lock();
  LockOptions o = as("a");
  o.ttl = std::chrono::milliseconds(100);
  auto a = lock->try_acquire("k", o);
  ASSERT_TRUE(a);
  write_n(*a->connection(), 10, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(a->lost());
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(committed_n(1), 10);
}

TEST_P(OptimisticLockTest, ACriticalSectionThatThrowsCommitsNothingAndKeepsTheVersion) {
  auto lock = make_lock();
  const std::int64_t before = lock->try_acquire("k", as("a"))->fencing_token();
  EXPECT_THROW(with_lock(*lock, "k", milliseconds(0), as("a"),
                         [&](Lease& lease) {
                           write_n(*lease.connection(), 99);
                           throw std::runtime_error("failed");
                         }),
               std::runtime_error);
  EXPECT_EQ(committed_n(), 0);
  EXPECT_EQ(lock->try_acquire("k", as("a"))->fencing_token(), before);
}

TEST_P(OptimisticLockTest, AVersionRowDeletedAndCreatedAgainNeverLetsAStaleReaderWin) {
  auto lock = make_lock();
  auto stale = lock->try_acquire("k", as("stale"));
  ASSERT_TRUE(stale);
  {
    auto c = backend().connect();
    c->execute("DELETE FROM " + tables_.qualified(backend().dialect, "versions"));
  }
  auto fresh = lock->try_acquire("k", as("fresh"));  // creates the row again
  ASSERT_TRUE(fresh);
  EXPECT_GT(fresh->fencing_token(), stale->fencing_token());
  write_n(*stale->connection(), 5);
  EXPECT_EQ(stale->release(), ReleaseOutcome::kConflict);
  EXPECT_EQ(committed_n(), 0);
  EXPECT_EQ(fresh->release(), ReleaseOutcome::kReleased);
}

TEST_P(OptimisticLockTest, WithLockRetriesAConflictAndReportsTheAttempts) {
  auto lock = make_lock();
  LockAttempts tries;
  int runs = 0;
  auto result = with_lock(
      *lock, "k", milliseconds(0), as("a"),
      [&](Lease& lease) {
        ++runs;
        write_n(*lease.connection(), runs);
        if (runs == 1) {  // someone else commits under the key meanwhile
          auto other = lock->try_acquire("k", as("b"));
          EXPECT_EQ(other->release(), ReleaseOutcome::kReleased);
        }
        return runs;
      },
      &tries);
  ASSERT_TRUE(result);
  EXPECT_EQ(*result, 2);
  EXPECT_EQ(tries.attempts, 2);
  EXPECT_EQ(tries.conflicts, 1);
  EXPECT_EQ(committed_n(), 2);
}

TEST_P(OptimisticLockTest, WithLockGivesUpAfterTheLastAttempt) {
  auto lock = make_lock(3);
  LockAttempts tries;
  auto result = with_lock(
      *lock, "k", milliseconds(0), as("a"),
      [&](Lease& lease) {
        write_n(*lease.connection(), 7);
        lock->try_acquire("k", as("b"))->release();  // always beaten
      },
      &tries);
  EXPECT_FALSE(result);
  EXPECT_EQ(tries.attempts, 3);
  EXPECT_EQ(tries.conflicts, 3);
  EXPECT_EQ(committed_n(), 0);
}

TEST_P(OptimisticLockTest, PredicateCompareAndSetOnTheCallersTable) {
  auto c = backend().connect();
  const std::string table = tables_.name("counter");
  c->execute("UPDATE " + counter_ + " SET n = 2 WHERE id = 1");
  const ConditionalUpdate sell{table, "id", Value(1), {Assignment::add("n", -1)}, {{"n", ">", 0}}};
  EXPECT_EQ(conditional_update(*c, sell), CasOutcome::kApplied);
  EXPECT_EQ(conditional_update(*c, sell), CasOutcome::kApplied);
  EXPECT_EQ(conditional_update(*c, sell), CasOutcome::kConflict);
  EXPECT_EQ(read_n(*c), 0);
  // Setting a value it already has matched the row: applied, on MySQL too.
  const ConditionalUpdate same{table, "id", Value(1), {Assignment::value("n", 0)}, {{"n", "=", 0}}};
  EXPECT_EQ(conditional_update(*c, same), CasOutcome::kApplied);
  // No such row.
  EXPECT_EQ(conditional_update(*c, {table, "id", Value(42), {Assignment::value("n", 1)}, {}}),
            CasOutcome::kConflict);
}

TEST_P(OptimisticLockTest, VersionedUpdateOfTheCallersTable) {
  auto c = backend().connect();
  const std::string table = tables_.name("counter");
  VersionedUpdate u{table, "id", Value(1), "version", 0, {Assignment::value("n", 5)}};
  EXPECT_EQ(versioned_update(*c, u), CasOutcome::kApplied);
  EXPECT_EQ(versioned_update(*c, u), CasOutcome::kConflict);  // version is 1 now
  u.expected_version = 1;
  u.set = {Assignment::value("n", 6)};
  EXPECT_EQ(versioned_update(*c, u), CasOutcome::kApplied);
  auto r = c->execute("SELECT n, version FROM " + counter_ + " WHERE id = 1");
  EXPECT_EQ(r.int64_at(0, "n"), 6);
  EXPECT_EQ(r.int64_at(0, "version"), 2);
}

TEST_P(OptimisticLockTest, BadNamesAndOperatorsAreRejectedBeforeAnyStatement) {
  auto c = backend().connect();
  const std::string table = tables_.name("counter");
  const std::vector<ConditionalUpdate> bad = {
      {"counter; DROP TABLE x", "id", Value(1), {Assignment::value("n", 1)}, {}},
      {table, "id", Value(1), {Assignment::value("n = 1, version", 1)}, {}},
      {table, "id", Value(1), {Assignment::value("n", 1)}, {{"n", "> 0 OR 1 =", 1}}},
      {table, "id", Value(1), {}, {}},
      {table, "id", Value(), {Assignment::value("n", 1)}, {}},
  };
  for (const auto& u : bad) {
    try {
      conditional_update(*c, u);
      ADD_FAILURE() << u.table;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_EQ(read_n(*c), 0);
}

INSTANTIATE_TEST_SUITE_P(Pairs, OptimisticLockTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
