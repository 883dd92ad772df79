// SPDX-License-Identifier: Apache-2.0
// SessionLock without a database: a scripted connection records the statements and parameters
// the strategy sends and answers as each server would, for what the integration suite cannot
// reach here (a Galera node, MySQL 8.0's whole-second GET_LOCK, a server_id of 128 or more) and
// for the exact lock names and wait bounds.
#include "dblock/session_lock.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "dblock/error.hpp"
#include "scripted_connection.hpp"
#include "sha256.hpp"
#include "thrown.hpp"

namespace dblock {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string text_of(const Value& v) { return v.to_text().value_or("NULL"); }

std::string hash_of(const TableNames& tables, const std::string& key) {
  return detail::sha256_hex(tables.schema() + '\x1f' + tables.prefix() + '\x1f' + key);
}

TEST(SessionLock, NamesAPostgreSQLLockByTheFirst64BitsOfTheHash) {
  ScriptedConnection conn(Server::kPostgreSQL);
  conn.answer = [](const std::string&) { return token("7"); };
  auto source = borrow(conn);
  const TableNames tables("app_", "infra");
  SessionLock locks(*source, {.tables = tables});
  auto lease = locks.try_acquire("order:1");
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->fencing_token(), 7);
  const auto bits =
      static_cast<std::int64_t>(std::stoull(hash_of(tables, "order:1").substr(0, 16), nullptr, 16));
  ASSERT_FALSE(conn.sent.empty());
  EXPECT_NE(conn.sent[0].sql.find("pg_try_advisory_lock"), std::string::npos);
  ASSERT_EQ(conn.sent[0].params.size(), 1u);
  EXPECT_EQ(text_of(conn.sent[0].params[0]), std::to_string(bits));
  EXPECT_NE(conn.sent[0].sql.find("\"infra\".\"app_row_lock_tokens\""), std::string::npos);
  lease.reset();
  EXPECT_EQ(conn.sent_with("pg_advisory_unlock(").size(), 1u);
}

// The lease's connection borrowed (SessionConnection) on this thread: renew() sends nothing into
// the caller's transaction, and a release unlocks only once the borrow ends, not under it.
TEST(SessionLock, ALeaseReleasedWhileItsConnectionIsBorrowedUnlocksWhenTheBorrowEnds) {
  ScriptedConnection conn(Server::kPostgreSQL);
  conn.answer = [](const std::string&) { return token("7"); };
  auto source = borrow(conn);
  SessionLock locks(*source);
  auto lease = locks.try_acquire("k");
  ASSERT_TRUE(lease);
  {
    SessionConnection borrowed(*lease);
    EXPECT_EQ(&*borrowed, &conn);
    const std::size_t before = conn.sent.size();
    EXPECT_TRUE(lease->renew());
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    EXPECT_EQ(conn.sent.size(), before);
  }
  EXPECT_EQ(conn.sent_with("pg_advisory_unlock(").size(), 1u);
  Lease empty;
  EXPECT_THROW(SessionConnection none(empty), Error);
}

TEST(SessionLock, BoundsPostgreSQLWaitsByLockTimeoutInTheLockStatement) {
  ScriptedConnection conn(Server::kPostgreSQL);
  auto source = borrow(conn);
  SessionLock locks(*source);
  EXPECT_FALSE(locks.acquire("k", milliseconds(300)));
  EXPECT_FALSE(locks.acquire("k", std::chrono::hours(24 * 30)));  // past lock_timeout's range
  EXPECT_FALSE(locks.acquire("k", std::chrono::hours(24 * 365 * 200)));  // forever
  const auto waits = conn.sent_with("pg_advisory_lock(");
  ASSERT_EQ(waits.size(), 3u);
  std::vector<std::string> bounds;
  for (const auto& w : waits) {
    EXPECT_NE(w.sql.find("set_config('lock_timeout'"), std::string::npos);
    for (const Value& v : w.params) {
      if (v.to_text()->ends_with("ms") || v.to_text() == "0") bounds.push_back(text_of(v));
    }
  }
  EXPECT_EQ(bounds, (std::vector<std::string>{"300ms", "2147483647ms", "0"}));
}

TEST(SessionLock, NamesAMySQLLockDblockAnd40HexDigitsOfTheHash) {
  ScriptedConnection conn(Server::kMariaDB);
  auto source = borrow(conn);
  SessionLock locks(*source);
  const std::string key(255, 'k');
  EXPECT_FALSE(locks.try_acquire(key));
  const auto tries = conn.sent_with("GET_LOCK(");
  ASSERT_EQ(tries.size(), 1u);
  const std::string name = text_of(tries[0].params.at(0));
  EXPECT_EQ(name, "dblock_" + hash_of(TableNames(), key).substr(0, 40));
  EXPECT_LE(name.size(), 64u);
}

// MariaDB keeps GET_LOCK's fraction: one statement waits the whole bound.
TEST(SessionLock, MariaDBWaitsInOneStatementToTheMillisecond) {
  ScriptedConnection conn(Server::kMariaDB);
  auto source = borrow(conn);
  SessionLock locks(*source);
  EXPECT_FALSE(locks.acquire("k", milliseconds(300)));
  const auto waits = conn.sent_with("GET_LOCK(");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(text_of(waits[0].params.at(1)), text_of(Value(0.3)));
}

// MySQL 8.0 reads GET_LOCK's timeout as whole seconds: the strategy waits those, then tries again
// until the bound, and returns near it.
TEST(SessionLock, MySQL8WaitsWholeSecondsThenTriesUntilTheBound) {
  ScriptedConnection conn(Server::kMySQL);
  auto source = borrow(conn);
  SessionLock locks(*source);
  const auto start = Clock::now();
  EXPECT_FALSE(locks.acquire("k", milliseconds(1200)));
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(1190));
  EXPECT_LT(took, milliseconds(1400));
  const auto locks_sent = conn.sent_with("GET_LOCK(");
  ASSERT_GE(locks_sent.size(), 2u);
  EXPECT_EQ(text_of(locks_sent[0].params.at(1)), text_of(Value(1.0)));  // the whole second
  for (std::size_t i = 1; i < locks_sent.size(); ++i) {
    EXPECT_NE(locks_sent[i].sql.find("GET_LOCK(?, 0)"), std::string::npos) << i;
  }
}

// try_acquire("k") on a MariaDB whose wsrep_on is `wsrep_on` and whose tokens are `token_text`
// throws kFailedPrecondition saying `words` (`accepted`: what it would be to take the lock).
void expect_refused(ScriptedConnection& conn, const std::string& wsrep_on,
                    const std::string& token_text, const std::string& words, const char* accepted) {
  conn.answer = [wsrep_on, token_text](const std::string& sql) {
    if (sql.find("wsrep") != std::string::npos) return Result({"v"}, {{wsrep_on}}, 1);
    return token(token_text);
  };
  auto source = borrow(conn);
  SessionLock locks(*source);
  expect_error([&] { locks.try_acquire("k"); }, ErrorCode::kFailedPrecondition, words,
               std::string(accepted) + " was accepted");
}

TEST(SessionLock, RefusesAGaleraNodeBeforeLockingAnything) {
  ScriptedConnection conn(Server::kMariaDB);
  expect_refused(conn, "ON", "1", "Galera", "a Galera node");
  EXPECT_TRUE(conn.sent_with("GET_LOCK(").empty());
}

// UUID_SHORT() past INT64_MAX (server_id >= 128): refused, and the lock just taken is freed.
TEST(SessionLock, RefusesATokenThatDoesNotFitAndFreesTheLock) {
  ScriptedConnection conn(Server::kMariaDB);
  expect_refused(conn, "OFF", "18374686479671623680",  // server_id 255
                 "server_id", "an unsigned token");
  EXPECT_EQ(conn.sent_with("RELEASE_ALL_LOCKS").size(), 1u);
}

// A PostgreSQL wait that runs out fails with lock_not_available: not acquired, and the session
// is left holding nothing.
TEST(SessionLock, AWaitThatRunsOutIsNotAcquiredAndFreesTheSession) {
  ScriptedConnection conn(Server::kPostgreSQL);
  conn.answer = [](const std::string& sql) -> Result {
    if (sql.find("pg_advisory_lock(") != std::string::npos) {
      throw Error(ErrorCode::kLockNotAvailable, "canceling statement due to lock timeout");
    }
    return {};
  };
  auto source = borrow(conn);
  SessionLock locks(*source);
  EXPECT_FALSE(locks.acquire("k", milliseconds(50)));
  EXPECT_EQ(conn.sent_with("pg_advisory_unlock_all").size(), 1u);
}

TEST(SessionLock, ReentrantLeasesShareOneHoldAndTheOutermostUnlocks) {
  ScriptedConnection conn(Server::kPostgreSQL);
  conn.answer = [](const std::string& sql) {
    return sql.find("unlock") != std::string::npos ? Result({"released"}, {{"1"}}, 1) : token("42");
  };
  auto source = borrow(conn);  // one connection: a second hold would block on it
  SessionLock locks(*source);
  auto outer = locks.try_acquire("k");
  ASSERT_TRUE(outer);
  auto inner = locks.try_acquire("k");
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->fencing_token(), 42);
  EXPECT_EQ(conn.sent_with("pg_try_advisory_lock").size(), 1u);
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  EXPECT_TRUE(conn.sent_with("unlock").empty());
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(conn.sent_with("unlock").size(), 1u);
}

}  // namespace
}  // namespace dblock
