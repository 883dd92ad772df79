// SPDX-License-Identifier: Apache-2.0
// Server configurations users run, on the test servers themselves: with DBLOCK_TEST_SERVER_CONFIG
// set (the ctest label "config" sets it), the suite logs in as a user whose sessions start with
// that configuration, so every statement dblock sends meets it.
//
// Before the first test, this sets the configuration up through the normal test URLs (their users
// are administrators), checks that a new session really gets it, and points DBLOCK_TEST_PG_URL or
// DBLOCK_TEST_MYSQL_URL at the configured user; everything that reads them (the tests, the CLI,
// the worker processes) then runs under it. A configuration that cannot be set up fails the run.
//
//   PostgreSQL: a role per configuration with ALTER ROLE ... SET (the same as a database's or
//   the server's setting for every session of that role).
//   MariaDB/MySQL: a user per configuration without CONNECTION ADMIN, and the server's
//   init_connect setting that session's variables by user name (the same as a server started
//   with them; other users' sessions keep their settings). The latin1 configuration also uses
//   a database created with the latin1 default, as a latin1 server creates them.
//
// Thread-safety: runs once, before the tests, on the main thread.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "backends.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {
namespace {

struct ServerConfig {
  Dialect dialect;
  // PostgreSQL: "name = value" pairs for ALTER ROLE ... SET. MySQL: the session variables.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string database;  // MySQL: a database of its own, created with this CHARACTER SET clause
  std::string database_charset;
};

constexpr const char* kUserPrefix = "dblock_cfg_";

// Session variables only MariaDB has: left out of init_connect on MySQL.
bool mariadb_only(const std::string& variable) { return variable == "innodb_snapshot_isolation"; }

const std::map<std::string, ServerConfig>& configs() {
  static const std::map<std::string, ServerConfig> all = {
      {"pg_repeatable_read",
       {Dialect::kPostgreSQL, {{"default_transaction_isolation", "repeatable read"}}, "", ""}},
      {"pg_serializable",
       {Dialect::kPostgreSQL, {{"default_transaction_isolation", "serializable"}}, "", ""}},
      // +12:45 / +13:45: not a whole hour, east of UTC, and a date ahead of UTC most of the day.
      {"pg_time_zone", {Dialect::kPostgreSQL, {{"TimeZone", "Pacific/Chatham"}}, "", ""}},
      // Tables without a schema go to the first schema of the path, not to public.
      {"pg_search_path",
       {Dialect::kPostgreSQL, {{"search_path", "dblock_cfg_app, public"}}, "", ""}},
      {"mysql_sql_mode",
       {Dialect::kMySQL,
        {{"sql_mode",
          "ANSI,STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
          "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,NO_BACKSLASH_ESCAPES,"
          "ONLY_FULL_GROUP_BY,NO_AUTO_VALUE_ON_ZERO"}},
        "",
        ""}},
      {"mysql_time_zone", {Dialect::kMySQL, {{"time_zone", "+05:45"}}, "", ""}},
      {"mysql_read_committed",
       {Dialect::kMySQL, {{"transaction_isolation", "READ-COMMITTED"}}, "", ""}},
      {"mysql_serializable",
       {Dialect::kMySQL, {{"transaction_isolation", "SERIALIZABLE"}}, "", ""}},
      // MariaDB only: a REPEATABLE READ transaction that would lock or write a row changed since
      // its snapshot is rolled back with error 1020 (the default from MariaDB 11.6.2).
      {"mariadb_snapshot_isolation",
       {Dialect::kMySQL, {{"innodb_snapshot_isolation", "ON"}}, "", ""}},
      {"mysql_latin1",
       {Dialect::kMySQL,
        {{"character_set_server", "latin1"}, {"collation_server", "latin1_swedish_ci"}},
        "dblock_cfg_latin1",
        "CHARACTER SET latin1 COLLATE latin1_swedish_ci"}},
  };
  return all;
}

// A string literal: quotes doubled, and on MySQL backslashes too (the administrator sessions
// here run without NO_BACKSLASH_ESCAPES).
std::string sql_literal(Dialect dialect, const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || (c == '\\' && dialect == Dialect::kMySQL)) out += c;
    out += c;
  }
  return out + "'";
}

// `url` (a URL text) with its user name and, when given, its database replaced.
std::string with_user_and_database(std::string url, const std::string& user,
                                   const std::string& database) {
  auto start = url.find("://") + 3;
  auto colon = url.find(':', start);
  url.replace(start, colon - start, user);
  if (!database.empty()) {
    auto slash = url.find('/', url.rfind('@'));
    auto end = url.find('?', slash);
    url.replace(slash + 1, end == std::string::npos ? std::string::npos : end - slash - 1,
                database);
  }
  return url;
}

void set_up_postgresql(const ServerConfig& config, const DatabaseUrl& u, const std::string& role) {
  auto admin = open_connection(u);
  const std::string quoted = quote_identifier(Dialect::kPostgreSQL, role);
  if (admin->execute("SELECT 1 FROM pg_roles WHERE rolname = $1", {Value(role)}).size() == 0) {
    admin->execute("CREATE ROLE " + quoted + " LOGIN SUPERUSER");
  }
  admin->execute("ALTER ROLE " + quoted + " PASSWORD " +
                 sql_literal(Dialect::kPostgreSQL, u.password));
  for (const auto& [setting, value] : config.settings) {
    if (setting == "search_path") {
      admin->execute("CREATE SCHEMA IF NOT EXISTS dblock_cfg_app AUTHORIZATION " + quoted);
      admin->execute("ALTER ROLE " + quoted + " SET search_path = dblock_cfg_app, public");
    } else {
      admin->execute("ALTER ROLE " + quoted + " SET " + setting + " = " +
                     sql_literal(Dialect::kPostgreSQL, value));
    }
  }
}

void set_up_mysql(const ServerConfig& config, const DatabaseUrl& u, const std::string& user) {
  auto admin = open_connection(u);
  const bool mariadb =
      admin->execute("SELECT VERSION() AS v").at(0, "v").value_or("").find("MariaDB") !=
      std::string::npos;
  for (const char* host : {"127.0.0.1", "localhost"}) {
    const std::string account =
        sql_literal(Dialect::kMySQL, user) + "@" + sql_literal(Dialect::kMySQL, host);
    admin->execute("CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY " +
                   sql_literal(Dialect::kMySQL, u.password));
    admin->execute("GRANT ALL ON *.* TO " + account);
    // init_connect is not run for sessions of users who may administer connections.
    admin->execute(mariadb ? "REVOKE SUPER, CONNECTION ADMIN ON *.* FROM " + account
                           : "REVOKE SUPER, CONNECTION_ADMIN ON *.* FROM " + account);
  }
  if (!config.database.empty()) {
    admin->execute("CREATE DATABASE IF NOT EXISTS " +
                   quote_identifier(Dialect::kMySQL, config.database) + " " +
                   config.database_charset);
  }
  // One init_connect for every configuration, so runs of different configurations at once
  // agree on it: each variable is set to the configuration's value for that configuration's
  // user and to its own value for every other session.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_variable;
  for (const auto& [other_name, other] : configs()) {
    if (other.dialect != Dialect::kMySQL) continue;
    for (const auto& [variable, value] : other.settings) {
      if (mariadb_only(variable) && !mariadb) continue;
      by_variable[variable].emplace_back(kUserPrefix + other_name, value);
    }
  }
  // Each CASE names the user itself: a user variable assigned earlier in the same SET is not
  // yet visible to the later assignments.
  const std::string who = "SUBSTRING_INDEX(USER(), '@', 1)";
  std::string init = "SET @dblock_server_config = " + who;
  for (const auto& [variable, cases] : by_variable) {
    // MariaDB before 11.1 knows the isolation level only as tx_isolation.
    std::string var = variable == "transaction_isolation" && mariadb ? "tx_isolation" : variable;
    init += ", SESSION " + var + " = CASE " + who;
    for (const auto& [user_name, value] : cases) {
      init += " WHEN " + sql_literal(Dialect::kMySQL, user_name) + " THEN " +
              sql_literal(Dialect::kMySQL, value);
    }
    init += " ELSE @@SESSION." + var + " END";
  }
  admin->execute("SET GLOBAL init_connect = " + sql_literal(Dialect::kMySQL, init));
}

// Opens a session as the configured user and checks that it starts with the configuration.
void check(const std::string& name, const ServerConfig& config, const std::string& url_text) {
  auto conn = open_connection(DatabaseUrl::parse(url_text));
  auto read = [&](const std::string& sql) {
    return conn->execute(sql).at(0, "v").value_or("NULL");
  };
  auto expect = [](const std::string& what, const std::string& got, const std::string& want) {
    if (got != want) throw std::runtime_error(what + " is " + got + ", not " + want);
  };
  if (config.dialect == Dialect::kPostgreSQL) {
    for (const auto& [setting, value] : config.settings) {
      if (setting == "search_path") {
        expect("current_schema()", read("SELECT current_schema() AS v"), "dblock_cfg_app");
      } else {
        expect(
            setting,
            read("SELECT current_setting(" + sql_literal(Dialect::kPostgreSQL, setting) + ") AS v"),
            value);
      }
    }
    return;
  }
  expect("the session's configuration (set by init_connect)",
         read("SELECT @dblock_server_config AS v"), kUserPrefix + name);
  const bool mariadb = read("SELECT VERSION() AS v").find("MariaDB") != std::string::npos;
  for (const auto& [setting, value] : config.settings) {
    if (setting == "time_zone") {
      // dblock's own connections set time_zone to UTC after connecting, so init_connect having
      // run is the check; connections a service opens and hands over (wrap_mysql) keep the zone.
      continue;
    }
    if (mariadb_only(setting) && !mariadb) {
      throw std::runtime_error(setting + " is MariaDB's; this server is not MariaDB");
    }
    std::string var = setting == "transaction_isolation" && mariadb ? "tx_isolation" : setting;
    std::string got = read("SELECT @@SESSION." + var + " AS v");
    if (setting == "innodb_snapshot_isolation") {
      expect(setting, got == "1" ? "ON" : got, value);  // a boolean reads back as 1 or 0
    } else if (setting == "sql_mode") {
      if (got.find("ANSI_QUOTES") == std::string::npos ||
          got.find("STRICT_ALL_TABLES") == std::string::npos) {
        throw std::runtime_error("sql_mode is " + got);
      }
    } else {
      expect(setting, got, value);
    }
  }
  if (!config.database.empty()) {
    expect("character_set_database", read("SELECT @@character_set_database AS v"), "latin1");
  }
}

class ServerConfigEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* name = std::getenv("DBLOCK_TEST_SERVER_CONFIG");
    if (name == nullptr || *name == '\0') return;
    try {
      auto it = configs().find(name);
      if (it == configs().end()) {
        throw std::runtime_error("unknown configuration; see tests/integration/server_config.cpp");
      }
      const ServerConfig& config = it->second;
      const char* env =
          config.dialect == Dialect::kPostgreSQL ? "DBLOCK_TEST_PG_URL" : "DBLOCK_TEST_MYSQL_URL";
      const char* base = std::getenv(env);
      if (base == nullptr || *base == '\0') throw std::runtime_error(std::string(env) + " unset");
      const std::string user = kUserPrefix + std::string(name);
      DatabaseUrl u = DatabaseUrl::parse(base);
      if (config.dialect == Dialect::kPostgreSQL) {
        set_up_postgresql(config, u, user);
      } else {
        set_up_mysql(config, u, user);
      }
      std::string url = with_user_and_database(base, user, config.database);
      check(name, config, url);
      setenv(env, url.c_str(), 1);
      std::fprintf(stderr, "server configuration %s: user %s%s%s\n", name, user.c_str(),
                   config.database.empty() ? "" : ", database ", config.database.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "server configuration %s could not be set up: %s\n", name, e.what());
      std::exit(1);
    }
  }
};

[[maybe_unused]] const ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServerConfigEnvironment);

}  // namespace
}  // namespace dblock::testing
