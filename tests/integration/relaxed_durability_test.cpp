// SPDX-License-Identifier: Apache-2.0
// UniqueKeyLockOptions::relaxed_durability on every database x driver pair. On PostgreSQL the
// lock statements must switch synchronous_commit off for their own transaction, and only for
// it: each lock statement is run inside an explicit transaction by a connection wrapper that
// reads SHOW synchronous_commit right after it, before the commit that the setting governs. On
// MySQL/MariaDB the option changes nothing (the statements are identical). On both, the lock
// keeps excluding other owners and hands the key over with a higher fencing token.
#include <gtest/gtest.h>

#include "backends.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/unique_key_lock.hpp"
#include "forwarding_connection.hpp"
#include "migrated_fixture.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::testing {
namespace {

// Runs every statement that contains `match` (say, the lock table's name) inside BEGIN ...
// COMMIT and records the transaction's synchronous_commit as the statement left it.
class ObservingConnection final : public ForwardingConnection {
 public:
  ObservingConnection(std::unique_ptr<Connection> inner, std::string match)
      : ForwardingConnection(std::move(inner)), table_(std::move(match)) {}

  Result execute(std::string_view sql, std::span<const Value> params) override {
    if (sql.find(table_) == std::string_view::npos) return inner().execute(sql, params);
    inner().begin();
    Result r = inner().execute(sql, params);
    seen.push_back(setting());
    inner().commit();
    return r;
  }

  std::string setting() { return inner().execute("SHOW synchronous_commit").at(0, 0).value_or(""); }

  std::vector<std::string> seen;

 private:
  std::string table_;
};

class RelaxedDurabilityTest : public MigratedTablesTest {
 protected:
  LockOptions as(const std::string& owner) {
    return {.owner = Owner::named(owner), .auto_renew = false};
  }
};

TEST_P(RelaxedDurabilityTest, PostgreSQLLockStatementsCommitAsynchronouslyAndOnlyThemselves) {
  if (backend().dialect == Dialect::kMySQL) {
    // Documented: no effect on MySQL/MariaDB, whose flush-at-commit setting is global only.
    const detail::UniqueKeySql& sql = detail::server_sql(Server::kMySQL).unique_key;
    for (std::string_view t : {sql.acquire, sql.release, sql.renew}) {
      EXPECT_EQ(detail::Statement(t, Dialect::kMySQL, tables_, true).sql(),
                detail::Statement(t, Dialect::kMySQL, tables_, false).sql());
    }
    return;
  }
  for (bool relaxed : {true, false}) {
    SCOPED_TRACE(relaxed ? "relaxed" : "durable");
    auto owned = std::make_unique<ObservingConnection>(
        backend().connect(), tables_.qualified(backend().dialect, "locks"));
    ObservingConnection& conn = *owned;
    auto source = single(std::move(owned));
    UniqueKeyLock lock(*source,
                       {.tables = tables_, .notify = false, .relaxed_durability = relaxed});
    auto lease = lock.try_acquire("k", as("a"));
    ASSERT_TRUE(lease);
    EXPECT_TRUE(lease->renew());
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    const std::string expected = relaxed ? "off" : "on";
    EXPECT_EQ(conn.seen, std::vector<std::string>(3, expected));
    // The session keeps its own setting once the statement's transaction is over.
    EXPECT_EQ(conn.setting(), "on");
  }
}

TEST_P(RelaxedDurabilityTest, AFairWaitersPlaceSkipsTheFlushButItsAcquireDoesNot) {
  // PostgreSQL: a fair waiter's first refused try takes its place in the queue in the same
  // statement, and only such a statement commits without waiting for its WAL flush (a place
  // lost in a server crash is taken again by the waiter's next refresh). The try that gets the
  // key commits durably, durable lock or not: else a crash could lose a lock row the server had
  // granted, and grant the key twice.
  if (backend().dialect == Dialect::kMySQL) {
    // A refused waiter registers in a statement of its own (enqueue), and no statement changes
    // the flush (see the test above).
    EXPECT_FALSE(detail::server_sql(Server::kMySQL).unique_key.acquire_joins_queue);
    return;
  }
  auto holder_source = single(backend().connect());
  UniqueKeyLock holder_lock(*holder_source, {.tables = tables_, .notify = false, .fair = true});
  auto held = holder_lock.try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  // The tries only (a leave reads the lock table too).
  auto owned = std::make_unique<ObservingConnection>(
      backend().connect(), "INSERT INTO " + tables_.qualified(backend().dialect, "locks"));
  ObservingConnection& conn = *owned;
  auto source = single(std::move(owned));
  // Polls 2 s apart: in its second the waiter sends its first try, and its last at the deadline.
  UniqueKeyLock lock(*source,
                     {.tables = tables_,
                      .backoff = {milliseconds(2000), milliseconds(2000), milliseconds(2000)},
                      .notify = false,
                      .fair = true});
  EXPECT_FALSE(lock.acquire("k", milliseconds(1000), as("waiter")));
  EXPECT_EQ(conn.seen, (std::vector<std::string>{"off", "on"}))
      << "a refused first try must take the waiter's place in the same statement, unflushed";
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  conn.seen.clear();
  auto lease = lock.acquire("k", milliseconds(300), as("waiter"));
  ASSERT_TRUE(lease);
  EXPECT_EQ(conn.seen, std::vector<std::string>{"on"}) << "the key was granted unflushed";
  conn.seen.clear();
  auto again = lock.acquire("k", milliseconds(300), as("waiter"));  // re-entry
  ASSERT_TRUE(again);
  EXPECT_EQ(conn.seen, std::vector<std::string>{"on"}) << "a re-entry was committed unflushed";
  again->release();
  lease->release();
}

TEST_P(RelaxedDurabilityTest, LockStillExcludesAndHandsOverWithAHigherToken) {
  auto source = single(backend().connect());
  UniqueKeyLock lock(*source, {.tables = tables_, .notify = false, .relaxed_durability = true});
  auto a = lock.try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  EXPECT_FALSE(lock.try_acquire("k", as("b")));
  EXPECT_TRUE(a->renew());
  EXPECT_FALSE(lock.try_acquire("k", as("b")));
  const std::int64_t first = a->fencing_token();
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  auto b = lock.try_acquire("k", as("b"));
  ASSERT_TRUE(b);
  EXPECT_GT(b->fencing_token(), first);
  EXPECT_EQ(b->release(), ReleaseOutcome::kReleased);
}

INSTANTIATE_TEST_SUITE_P(Pairs, RelaxedDurabilityTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
