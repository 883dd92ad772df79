// SPDX-License-Identifier: Apache-2.0
// A transactional lease (row lock) whose transaction the server ends before the release: the
// session killed, a deadlock inside the critical section, a statement that commits implicitly.
// The lock is gone then, so lost() must say so without waiting for the next statement, and no
// later statement of the critical section may run outside the transaction (MySQL/MariaDB would
// otherwise autocommit it) or be reported as committed by release().
#include <future>
#include <thread>

#include "backends.hpp"
#include "dblock/row_lock.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

class TransactionEndTest : public MigratedLockTest<RowLock, RowLockOptions> {
 protected:
  TransactionEndTest() : MigratedLockTest("e", 6) {}
  void SetUp() override {
    MigratedLockTest::SetUp();
    items_ = tables_.qualified(backend().dialect, "items");
    auto c = pool_->acquire();
    c->execute("CREATE TABLE " + items_ + " (id INT PRIMARY KEY, note VARCHAR(50) NOT NULL)");
    c->execute("INSERT INTO " + items_ + " (id, note) VALUES (1, 'one'), (2, 'two')");
  }
  bool mysql() const { return backend().dialect == Dialect::kMySQL; }
  std::string note(int id) {
    auto c = backend().connect();
    return c->execute("SELECT note FROM " + items_ + " WHERE id = " + std::to_string(id))
        .at(0, "note")
        .value_or("");
  }
  std::string set_note(int id, const std::string& note) {
    return "UPDATE " + items_ + " SET note = '" + note + "' WHERE id = " + std::to_string(id);
  }
  static bool lost_within(const Lease& lease, milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!lease.lost() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    return lease.lost();
  }

  std::string items_;
};

TEST_P(TransactionEndTest, AKilledSessionIsReportedLostWithoutAStatement) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->lost());
  auto killer = backend().connect();
  backend().kill_session(*killer, backend().session_id(*held->connection()));
  EXPECT_TRUE(lost_within(*held, milliseconds(2000)))
      << "lost() stayed false after the server killed the lease's session";
  // The server may close the socket a moment before its rollback frees the row.
  EXPECT_TRUE(lock_->acquire("k", milliseconds(2000), as("b")));
}

// Two critical sections lock the items in opposite orders: the server picks a victim and ends
// its transaction. PostgreSQL keeps the victim's locks until its rollback and refuses its later
// statements by itself; InnoDB rolls the whole transaction back at once, freeing the row lock.
TEST_P(TransactionEndTest, ADeadlockVictimsLeaseIsLostAndItsLaterStatementsAreRefused) {
  auto a = lock_->try_acquire("ka", as("a"));
  auto b = lock_->try_acquire("kb", as("b"));
  ASSERT_TRUE(a && b);
  a->connection()->execute(set_note(1, "a"));
  b->connection()->execute(set_note(2, "b"));
  auto a_second = std::async(std::launch::async, [&]() -> std::optional<ErrorCode> {
    try {
      a->connection()->execute(set_note(2, "a"));
      return std::nullopt;
    } catch (const Error& e) {
      return e.code();
    }
  });
  std::this_thread::sleep_for(milliseconds(300));  // a waits for b's row
  std::optional<ErrorCode> b_error;
  try {
    b->connection()->execute(set_note(1, "b"));
  } catch (const Error& e) {
    b_error = e.code();
  }
  std::optional<ErrorCode> a_error = a_second.get();
  ASSERT_NE(a_error.has_value(), b_error.has_value()) << "exactly one deadlock victim expected";
  Lease& victim = a_error ? *a : *b;
  Lease& survivor = a_error ? *b : *a;
  const std::string victim_key = a_error ? "ka" : "kb";
  EXPECT_EQ(a_error ? *a_error : *b_error, ErrorCode::kDeadlock);

  // The victim's critical section carries on: its statement must not run unprotected.
  bool refused = false;
  try {
    victim.connection()->execute(set_note(1, "after"));
  } catch (const Error& e) {
    refused = true;
    if (mysql()) {
      EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
    }
  }
  EXPECT_TRUE(refused) << "a statement after the deadlock ran outside the lock's transaction";
  if (mysql()) {
    EXPECT_TRUE(victim.lost()) << "InnoDB ended the transaction, the lease still looks held";
    EXPECT_TRUE(lock_->try_acquire(victim_key, as("c"))) << "the row lock was not free";
  }
  try {
    const ReleaseOutcome outcome = victim.release();
    ADD_FAILURE() << "the victim's release reported " << to_string(outcome);
  } catch (const Error& e) {
    if (mysql()) {
      EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
    }
  }
  EXPECT_EQ(survivor.release(), ReleaseOutcome::kReleased);
  EXPECT_NE(note(1), "after");
}

// DDL commits the open transaction implicitly on MySQL/MariaDB (and frees the row lock); on
// PostgreSQL DDL is transactional and the lease holds on.
TEST_P(TransactionEndTest, AStatementThatCommitsImplicitlyEndsTheLease) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  held->connection()->execute(set_note(1, "before-ddl"));
  held->connection()->execute("CREATE TABLE " + tables_.qualified(backend().dialect, "ddl") +
                              " (id INT PRIMARY KEY)");
  if (!mysql()) {
    EXPECT_FALSE(held->lost());
    EXPECT_FALSE(lock_->try_acquire("k", as("b")));
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
    return;
  }
  EXPECT_TRUE(held->lost()) << "the DDL committed the transaction, the lease still looks held";
  EXPECT_TRUE(lock_->try_acquire("k", as("b"))) << "the row lock was not free";
  try {
    held->connection()->execute(set_note(2, "unprotected"));
    ADD_FAILURE() << "a statement after the implicit commit ran in autocommit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
  }
  EXPECT_EQ(note(2), "two");
  EXPECT_THROW(held->release(), Error);
}

// A token handed to a lease whose transaction then rolled back (a dropped lease) may have been
// used by the caller: it must never be handed out again. The key's row keeps its old token after
// the rollback; when that token runs ahead of the server clock (as after the clock stepped
// back), GREATEST(previous + 1, clock) would hand the same token out again.
TEST_P(TransactionEndTest, ARolledBackTokenIsNeverHandedOutAgain) {
  ASSERT_TRUE(lock_->try_acquire("k", as("a")));  // creates the key's row
  if (!mysql()) {
    // The row's token runs an hour ahead of the clock, and the token sequence past it, as the
    // migration leaves it (it starts above every token stamped so far).
    auto c = backend().connect();
    const std::string ahead =
        "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 3600000000";
    c->execute("UPDATE " + tables_.qualified(backend().dialect, "row_locks") +
               " SET fencing_token = " + ahead + " WHERE lock_key = 'k'");
    c->execute("SELECT setval('" + tables_.qualified(backend().dialect, "row_lock_tokens") + "', " +
               ahead + " + 1000)");
  }
  // MySQL/MariaDB tokens stay GREATEST(previous + 1, clock) (no sequences in MySQL 8; see
  // migrations/mysql/0004): what holds there is checked while tokens follow the server clock.
  std::int64_t dropped = 0;
  {
    auto lease = lock_->try_acquire("k", as("a"));
    ASSERT_TRUE(lease);
    dropped = lease->fencing_token();
  }  // dropped without release: its transaction rolls back, the row keeps the older token
  auto next = lock_->try_acquire("k", as("b"));
  ASSERT_TRUE(next);
  EXPECT_GT(next->fencing_token(), dropped) << "a rolled-back token was handed out again";
}

INSTANTIATE_TEST_SUITE_P(Pairs, TransactionEndTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
