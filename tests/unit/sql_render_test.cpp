// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::detail {
namespace {

TEST(RenderSql, ExpandsTableNameAndSchemaPlaceholders) {
  TableNames names("app_", "infra");
  EXPECT_EQ(render_sql("CREATE INDEX {{name:locks_idx}} ON {{table:locks}} (x)",
                       Dialect::kPostgreSQL, names),
            "CREATE INDEX \"app_locks_idx\" ON \"infra\".\"app_locks\" (x)");
  EXPECT_EQ(render_sql("CREATE DATABASE IF NOT EXISTS {{schema}}", Dialect::kMySQL, names),
            "CREATE DATABASE IF NOT EXISTS `infra`");
}

TEST(RenderSql, KeepsRelaxedSectionsOnlyForRelaxedDurability) {
  TableNames names("app_");
  const char* templ = "UPDATE {{table:locks}} SET x = 1 WHERE {{relaxed:f() AND}} k = $1";
  EXPECT_EQ(render_sql(templ, Dialect::kPostgreSQL, names),
            "UPDATE \"app_locks\" SET x = 1 WHERE  k = $1");
  EXPECT_EQ(render_sql(templ, Dialect::kPostgreSQL, names, true),
            "UPDATE \"app_locks\" SET x = 1 WHERE f() AND k = $1");
}

TEST(RenderSql, RejectsUnknownOrBrokenPlaceholders) {
  TableNames names;
  EXPECT_THROW(render_sql("SELECT {{oops}}", Dialect::kMySQL, names), Error);
  EXPECT_THROW(render_sql("SELECT {{table:x", Dialect::kMySQL, names), Error);
  EXPECT_THROW(render_sql("{{schema}}", Dialect::kMySQL, names), Error);  // no schema set
  EXPECT_THROW(render_sql("{{table:bad-name}}", Dialect::kMySQL, names), Error);
}

TEST(ServerSql, EveryTemplateRendersForEveryServer) {
  TableNames names("p_", "s");
  for (Server server : {Server::kPostgreSQL, Server::kMySQL, Server::kMariaDB}) {
    const Dialect d = dialect_of(server);
    const MigratorSql& sql = server_sql(server).migrator;
    for (std::string_view t : {sql.create_schema, sql.create_table, sql.select}) {
      std::string out = render_sql(t, d, names);
      EXPECT_EQ(out.find("{{"), std::string::npos) << out;
    }
    // The migrator's statements with parameters bind from the Migrator's argument lists.
    for (std::string_view t : {sql.lock, sql.unlock, sql.table_exists, sql.insert}) {
      if (t.empty()) continue;  // PostgreSQL's lock ends at COMMIT: no unlock
      Statement s(t, d, names);
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      EXPECT_NO_THROW(s.bind({{"lock", Value("1")},
                              {"timeout_s", Value(10)},
                              {"qualified", Value("q")},
                              {"schema", Value()},
                              {"table", Value("t")},
                              {"version", Value(1)},
                              {"name", Value("n")},
                              {"checksum", Value("c")}}));
    }
  }
}

// MariaDB's set is MySQL's, but for the row lock's waits, which MariaDB bounds in the statement.
TEST(ServerSql, MariaDBTakesMySQLsStatementsButBoundsRowLockWaitsInTheStatement) {
  const ServerSql& mysql = server_sql(Server::kMySQL);
  const ServerSql& mariadb = server_sql(Server::kMariaDB);
  EXPECT_EQ(mariadb.unique_key.acquire, mysql.unique_key.acquire);
  EXPECT_EQ(mariadb.cleaner.tables.data(), mysql.cleaner.tables.data());
  EXPECT_EQ(mariadb.versions.cas, mysql.versions.cas);
  EXPECT_EQ(mariadb.row_lock.try_lock, mysql.row_lock.try_lock);
  EXPECT_FALSE(mysql.row_lock.session_wait.empty());
  EXPECT_TRUE(mariadb.row_lock.session_wait.empty());
  EXPECT_TRUE(mariadb.row_lock.session_wait_reset.empty());
  for (std::string_view wait : {mariadb.row_lock.wait, mariadb.row_lock.target_wait}) {
    EXPECT_TRUE(wait.starts_with("SET STATEMENT max_statement_time=")) << wait;
    EXPECT_TRUE(wait.ends_with("FOR UPDATE WAIT {{seconds}}")) << wait;
  }
  EXPECT_NE(mariadb.row_lock.create.find("innodb_lock_wait_timeout=1"), std::string_view::npos);
  EXPECT_NE(mysql.row_lock.wait.find("MAX_EXECUTION_TIME"), std::string_view::npos);
}

// The session lock's statements render and bind from SessionLock's argument list on every server;
// the fencing token comes in the lock statement itself; MariaDB keeps GET_LOCK's fractional
// timeout, MySQL 8.0 does not.
TEST(ServerSql, SessionLockStatementsBindAndCarryTheirToken) {
  TableNames names("p_", "s");
  for (Server server : {Server::kPostgreSQL, Server::kMySQL, Server::kMariaDB}) {
    const Dialect d = dialect_of(server);
    const SessionLockSql& sql = server_sql(server).session_lock;
    for (std::string_view t : {sql.try_lock, sql.wait, sql.release, sql.unlock_all}) {
      ASSERT_FALSE(t.empty());
      Statement s(t, d, names);
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      EXPECT_NO_THROW(s.bind({{"lock", Value(1)}, {"timeout", Value("1ms")}}));
    }
    for (std::string_view t : {sql.try_lock, sql.wait}) {
      EXPECT_NE(t.find("AS fencing_token"), std::string_view::npos) << t;
      EXPECT_NE(t.find(d == Dialect::kPostgreSQL ? "nextval('{{table:row_lock_tokens}}')"
                                                 : "UUID_SHORT()"),
                std::string_view::npos)
          << t;
    }
  }
  EXPECT_TRUE(server_sql(Server::kPostgreSQL).session_lock.fractional_wait);
  EXPECT_TRUE(server_sql(Server::kMariaDB).session_lock.fractional_wait);
  EXPECT_FALSE(server_sql(Server::kMySQL).session_lock.fractional_wait);
}

}  // namespace
}  // namespace dblock::detail
