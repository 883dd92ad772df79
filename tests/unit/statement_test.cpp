// SPDX-License-Identifier: Apache-2.0
#include "sql/statement.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {
namespace {

constexpr Server kServers[] = {Server::kPostgreSQL, Server::kMySQL, Server::kMariaDB};

constexpr const char* kTemplate =
    "UPDATE {{table:locks}} SET lease_id = {{param:id}}"
    " WHERE lock_key = {{param:key}} AND lease_id <> {{param:id}}";

std::vector<std::string> texts(const std::vector<Value>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.to_text().value_or("NULL"));
  return out;
}

// A lease's arguments as its holder's statements take them ("k" held by h/p/t as lease "l", token
// 1), then `more`.
std::vector<Arg> holder_args(std::initializer_list<Arg> more) {
  std::vector<Arg> args = {{"key", Value("k")},       {"lease_id", Value("l")},
                           {"host", Value("h")},      {"process", Value("p")},
                           {"thread", Value("t")},    {"ttl_ms", Value(std::int64_t{1000})},
                           {"metadata", Value()},     {"seq", Value()},
                           {"waiter_id", Value("w")}, {"token", Value(std::int64_t{1})},
                           {"channel", Value("ch")}};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(Statement, PostgreSQLNumbersEachNameOnceAndBindsItOnce) {
  Statement s(kTemplate, Dialect::kPostgreSQL, TableNames("app_"));
  EXPECT_EQ(s.sql(),
            "UPDATE \"app_locks\" SET lease_id = $1 WHERE lock_key = $2 AND lease_id <> $1");
  EXPECT_EQ(texts(s.bind({{"key", Value("k")}, {"id", Value("r-1")}})),
            (std::vector<std::string>{"r-1", "k"}));
}

TEST(Statement, MySQLBindsEachUseInTurn) {
  Statement s(kTemplate, Dialect::kMySQL, TableNames("app_"));
  EXPECT_EQ(s.sql(), "UPDATE `app_locks` SET lease_id = ? WHERE lock_key = ? AND lease_id <> ?");
  EXPECT_EQ(texts(s.bind({{"key", Value("k")}, {"id", Value("r-1")}})),
            (std::vector<std::string>{"r-1", "k", "r-1"}));
}

TEST(Statement, ArgumentsTheStatementDoesNotUseAreIgnored) {
  // One argument list serves both dialects: PostgreSQL's release takes a NOTIFY channel too.
  Statement s("SELECT {{param:a}}", Dialect::kMySQL, TableNames());
  EXPECT_EQ(texts(s.bind({{"channel", Value("c")}, {"a", Value(std::int64_t{7})}})),
            (std::vector<std::string>{"7"}));
}

TEST(Statement, AMissingArgumentIsAFailedPreconditionNamingIt) {
  Statement s(kTemplate, Dialect::kPostgreSQL, TableNames());
  try {
    s.bind({{"key", Value("k")}});
    ADD_FAILURE() << "bound without the id";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("'id'"), std::string::npos) << e.what();
  }
}

TEST(Statement, ParametersOnlyInStatements) {
  // Migrations and other templates rendered without a Statement take no parameters.
  EXPECT_THROW(render_sql("SELECT {{param:a}}", Dialect::kMySQL, TableNames()), Error);
  EXPECT_TRUE(Statement("", Dialect::kMySQL, TableNames()).empty());
}

TEST(Statement, FairSectionsAreKeptOnlyForAFairLock) {
  const std::string_view templ = "A{{fair}} B {{table:x}} {{param:k}}{{/fair}} C {{param:j}}";
  const Statement plain(templ, Dialect::kPostgreSQL, TableNames());
  EXPECT_EQ(plain.sql(), "A C $1");
  EXPECT_EQ(plain.bind({{"j", Value(1)}}).size(), 1u);  // k is not bound: its text is left out
  const Statement fair(templ, Dialect::kPostgreSQL, TableNames(), false, /*fair=*/true);
  EXPECT_EQ(fair.sql(), "A B \"dblock_x\" $1 C $2");
  EXPECT_EQ(fair.bind({{"k", Value(1)}, {"j", Value(2)}}).size(), 2u);
  EXPECT_THROW(render_sql("A{{fair}}B", Dialect::kMySQL, TableNames()), Error);
  EXPECT_THROW(render_sql("A{{/fair}}B", Dialect::kMySQL, TableNames()), Error);
  EXPECT_THROW(render_sql("{{fair}}{{fair}}{{/fair}}", Dialect::kMySQL, TableNames()), Error);
  // A lock that is not fair never reads the queue, so it runs on tables migrated before it.
  for (Server server : kServers) {
    const UniqueKeySql& sql = server_sql(server).unique_key;
    for (std::string_view t : {sql.acquire, sql.release, sql.release_rest, sql.renew}) {
      EXPECT_EQ(Statement(t, dialect_of(server), TableNames()).sql().find("lock_waiters"),
                std::string::npos)
          << t;
    }
  }
}

// The unique-key release of every server binds from the one argument list UniqueKeyLock gives.
TEST(Statement, TheReleaseStatementsBindFromOneArgumentList) {
  for (Server server : kServers) {
    const Dialect d = dialect_of(server);
    const UniqueKeySql& sql = server_sql(server).unique_key;
    for (auto [templ, fair] :
         {std::pair{sql.release, false}, std::pair{sql.release, true},
          std::pair{sql.release_rest, false}, std::pair{sql.release_rest, true}}) {
      Statement s(templ, d, TableNames(), false, fair);
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      EXPECT_NO_THROW(s.bind({{"key", Value("k")},
                              {"host", Value("h")},
                              {"process", Value("p")},
                              {"thread", Value("t")},
                              {"token", Value(std::int64_t{1})},
                              {"channel", Value("c")},
                              {"release_id", Value("r")},
                              {"min_hold_ms", Value(std::int64_t{0})},
                              {"lock_delay_ms", Value(std::int64_t{0})}}));
    }
  }
}

// The cleaner's statements take the grace in milliseconds on every server.
TEST(Statement, TheCleanerStatementsBindTheGraceInMilliseconds) {
  for (Server server : kServers) {
    const Dialect d = dialect_of(server);
    const CleanerSql& sql = server_sql(server).cleaner;
    ASSERT_EQ(sql.tables.size(), 7u);
    std::vector<std::string_view> templates;
    for (const CleanedTable& table : sql.tables) {
      if (table.base == "history") continue;  // the retention's, below
      // With a lock_sql, the delete takes the keys locked (bound from "keys", checked below).
      templates.push_back(table.lock_sql.empty() ? table.delete_sql : table.lock_sql);
      templates.push_back(table.count_sql);
      if (!table.lock_sql.empty()) {
        Statement locked(table.delete_sql, d, TableNames());
        EXPECT_EQ(texts(locked.bind({{"keys", Value(R"(["k"])")}})).front(), R"(["k"])")
            << locked.sql();
      }
    }
    for (std::string_view templ : templates) {
      Statement s(templ, d, TableNames());
      const auto values =
          texts(s.bind({{"grace_ms", Value(std::int64_t{1500})}, {"limit", Value(10)}}));
      EXPECT_NE(std::find(values.begin(), values.end(), "1500"), values.end()) << s.sql();
      EXPECT_NE(std::find(values.begin(), values.end(), "10"), values.end()) << s.sql();
    }
    // The history of holds is kept for its retention, not the grace.
    const CleanedTable& history = sql.tables.back();
    ASSERT_EQ(history.base, "history");
    for (std::string_view templ : {history.delete_sql, history.count_sql}) {
      Statement s(templ, d, TableNames());
      const auto values = texts(s.bind({{"grace_ms", Value(std::int64_t{1500})},
                                        {"retention_ms", Value(std::int64_t{2500})},
                                        {"limit", Value(10)}}));
      EXPECT_NE(std::find(values.begin(), values.end(), "2500"), values.end()) << s.sql();
      EXPECT_EQ(std::find(values.begin(), values.end(), "1500"), values.end()) << s.sql();
      EXPECT_NE(std::find(values.begin(), values.end(), "10"), values.end()) << s.sql();
    }
  }
}

// The unique-key acquire, renew and claim, fair waiting's and hand-offs', the row lock's, the
// optimistic version statements and the operators' statements bind from the one argument list
// their caller gives, on every server, and every placeholder the server sees gets a value.
TEST(Statement, TheLockStatementsBindFromTheirCallersArguments) {
  const std::vector<Arg> lease = holder_args({{"claim_id", Value("c")},
                                              {"lock_delay_ms", Value(std::int64_t{0})},
                                              {"fair", Value(1)},
                                              {"join_ttl_ms", Value(std::int64_t{5000})},
                                              {"version", Value(std::int64_t{2})},
                                              {"prefix", Value("k")},
                                              {"timeout", Value("300ms")},
                                              {"slot", Value(2)},
                                              {"place_ttl_ms", Value(std::int64_t{3000})},
                                              {"lease_ttl_ms", Value(std::int64_t{30000})},
                                              {"sent_us", Value(std::int64_t{7})},
                                              {"to_thread", Value()}});
  for (Server server : kServers) {
    const Dialect d = dialect_of(server);
    const ServerSql& sql = server_sql(server);
    for (std::string_view templ :
         {sql.unique_key.acquire,    sql.unique_key.renew,         sql.unique_key.claim,
          sql.unique_key.fair_check, sql.unique_key.enqueue,       sql.unique_key.leave,
          sql.unique_key.offer,      sql.unique_key.candidate,     sql.unique_key.wake,
          sql.versions.read,         sql.versions.create,          sql.versions.cas,
          sql.operators.list_prefix, sql.operators.waiter_queues,  sql.operators.row,
          sql.operators.release,     sql.operators.release_permit, sql.row_lock.exists,
          sql.row_lock.create,       sql.row_lock.set_timeout,     sql.row_lock.try_lock,
          sql.row_lock.stamp}) {
      if (templ.empty()) continue;  // a step this dialect does not have
      for (bool fair : {false, true}) {
        Statement s(templ, d, TableNames(), false, fair);
        EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
        const auto values = s.bind(lease);
        EXPECT_FALSE(values.empty()) << s.sql();
        if (d == Dialect::kMySQL) {
          EXPECT_EQ(static_cast<std::size_t>(std::count(s.sql().begin(), s.sql().end(), '?')),
                    values.size())
              << s.sql();
        } else {
          EXPECT_NE(s.sql().find("$" + std::to_string(values.size())), std::string::npos)
              << s.sql();
          EXPECT_EQ(s.sql().find("$" + std::to_string(values.size() + 1)), std::string::npos)
              << s.sql();
        }
      }
    }
  }
}

// LockOptions::lock_delay: every statement that sets a holder's expiry, or finds the holder's own
// hold, binds the lease's delay (a hand-over also the waiter's), on every server.
TEST(Statement, TheStatementsOfAHoldersExpiryBindItsLockDelay) {
  const std::vector<Arg> args = holder_args({{"lock_delay_ms", Value(std::int64_t{987651})},
                                             {"to_lock_delay_ms", Value(std::int64_t{987652})},
                                             {"min_hold_ms", Value(std::int64_t{0})},
                                             {"join_ttl_ms", Value()},
                                             {"release_id", Value("r")},
                                             {"to_lease_id", Value("l2")},
                                             {"to_host", Value("h2")},
                                             {"to_process", Value("p2")},
                                             {"to_thread", Value("t2")},
                                             {"to_waiter_id", Value("w2")},
                                             {"any_holds", Value(std::int64_t{0})},
                                             {"permits", Value(2)},
                                             {"first", Value(0)},
                                             {"last", Value(1)},
                                             {"blocked_by", Value(-1)},
                                             {"slot", Value(0)}});
  for (Server server : kServers) {
    const Dialect d = dialect_of(server);
    const ServerSql& sql = server_sql(server);
    for (std::string_view templ :
         {sql.unique_key.acquire, sql.unique_key.release, sql.unique_key.release_rest,
          sql.unique_key.hand_over, sql.unique_key.renew, sql.unique_key.fence,
          sql.semaphore.acquire, sql.semaphore.acquire_slot, sql.semaphore.release,
          sql.semaphore.renew, sql.semaphore.fence}) {
      if (templ.empty()) continue;  // a step this dialect does not have
      const auto values = texts(Statement(templ, d, TableNames()).bind(args));
      EXPECT_NE(std::find(values.begin(), values.end(), "987651"), values.end()) << templ;
    }
    const auto handed = texts(Statement(sql.unique_key.hand_over, d, TableNames()).bind(args));
    EXPECT_NE(std::find(handed.begin(), handed.end(), "987652"), handed.end());
    // A fair release, which may grant the key instead (PostgreSQL).
    const auto fair =
        texts(Statement(sql.unique_key.release, d, TableNames(), false, true).bind(args));
    EXPECT_NE(std::find(fair.begin(), fair.end(), "987651"), fair.end());
  }
}

}  // namespace
}  // namespace dblock::detail
