// SPDX-License-Identifier: Apache-2.0
// `dblock doctor` against each database x driver pair: a migrated single server passes every
// check; missing migrations and a user without write privileges are failures that say what to
// do, and the exit status says whether every guarantee holds. (Standbys, Galera and synchronous
// replication are checked in tests/ha, on the clusters there.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "cli_fixture.hpp"
#include "dblock/history.hpp"
#include "dblock/migration.hpp"
#include "dblock/url.hpp"

namespace dblock::testing {
namespace {

const std::vector<std::string> kChecks = {"server",     "writable", "replication", "isolation",
                                          "time_zone",  "clock",    "migrations",  "history",
                                          "privileges", "cleaner"};

// The output's line for `check`, or "" when there is none.
std::string line_of(const std::string& out, const std::string& check) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const auto space = line.find(' ');
    if (space != std::string::npos && line.compare(space + 1, check.size() + 1, check + ":") == 0) {
      return line;
    }
  }
  return "";
}

// `url` with another user name and password.
std::string with_user(const std::string& url, const std::string& user, const std::string& pw) {
  const auto start = url.find("://") + 3;
  const auto at = url.find('@', start);
  return url.substr(0, start) + user + ":" + pw + url.substr(at);
}

// A login of the test's own, with the password `pw`: a PostgreSQL role, or a MySQL user at
// 127.0.0.1 and at localhost. Dropped, with what it owns, when it ends.
class TestLogin {
 public:
  TestLogin(Connection& admin, Dialect dialect, std::string pw)
      : user(unique_name("doc")), password(std::move(pw)), admin_(admin), dialect_(dialect) {
    if (dialect_ == Dialect::kPostgreSQL) {
      accounts.push_back(quote_identifier(dialect_, user));
      admin_.execute("CREATE ROLE " + accounts[0] + " LOGIN PASSWORD '" + password + "'");
    } else {
      for (const char* host : {"127.0.0.1", "localhost"}) {
        accounts.push_back("'" + user + "'@'" + host + "'");
        admin_.execute("CREATE USER " + accounts.back() + " IDENTIFIED BY '" + password + "'");
      }
    }
  }
  ~TestLogin() {
    try {
      if (dialect_ == Dialect::kPostgreSQL) {
        admin_.execute("DROP OWNED BY " + accounts[0]);
        admin_.execute("DROP ROLE " + accounts[0]);
      } else {
        for (const auto& account : accounts) admin_.execute("DROP USER " + account);
      }
    } catch (const Error& e) {
      ADD_FAILURE() << "could not drop the test's login " << user << ": " << e.what();
    }
  }
  TestLogin(const TestLogin&) = delete;
  TestLogin& operator=(const TestLogin&) = delete;

  const std::string user;
  const std::string password;
  std::vector<std::string> accounts;  // as GRANT names them

 private:
  Connection& admin_;
  const Dialect dialect_;
};

class CliDoctorTest : public CliFixture {};

TEST_P(CliDoctorTest, AMigratedSingleServerPassesEveryCheck) {
  const ProcessResult r = run(cli("doctor", {}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const auto& check : kChecks) {
    EXPECT_EQ(line_of(r.out, check).rfind("ok " + check + ": ", 0), 0u)
        << "check " << check << " in:\n"
        << r.out;
  }
  EXPECT_NE(line_of(r.out, "replication").find("a single server"), std::string::npos) << r.out;
  const std::size_t shipped = builtin_migrations(backend().dialect).size();
  EXPECT_NE(
      line_of(r.out, "migrations").find("all " + std::to_string(shipped) + " migrations applied"),
      std::string::npos)
      << r.out;

  const ProcessResult json = run(cli("doctor", {"--json"}));
  EXPECT_EQ(json.exit_code, 0) << json.err;
  const auto findings = nlohmann::json::parse(json.out);
  ASSERT_EQ(findings.size(), kChecks.size()) << json.out;
  for (std::size_t i = 0; i < kChecks.size(); ++i) {
    EXPECT_EQ(findings[i]["check"], kChecks[i]);
    EXPECT_EQ(findings[i]["status"], "ok") << findings[i].dump();
    EXPECT_FALSE(findings[i]["message"].get<std::string>().empty());
  }
}

// The history of holds: off, on, and on without its table, when every statement that ends a
// hold would fail in its trigger (PostgreSQL; MySQL and MariaDB do not record it).
TEST_P(CliDoctorTest, TheHistoryIsReportedAndItsMissingTableIsAFailure) {
  EXPECT_EQ(line_of(run(cli("doctor", {})).out, "history").rfind("ok history: off", 0), 0u);
  if (backend().dialect != Dialect::kPostgreSQL) return;
  const TableNames names(prefix_);
  auto conn = backend().connect();
  enable_history(*conn, names);
  const ProcessResult on = run(cli("doctor", {}));
  EXPECT_EQ(on.exit_code, 0) << on.out << on.err;
  EXPECT_EQ(line_of(on.out, "history").rfind("ok history: on", 0), 0u) << on.out;
  conn->execute("DROP TABLE " + names.qualified(backend().dialect, "history"));
  const ProcessResult missing = run(cli("doctor", {}));
  EXPECT_EQ(missing.exit_code, 1) << missing.out << missing.err;
  const std::string line = line_of(missing.out, "history");
  EXPECT_EQ(line.rfind("failure history: the history's triggers are on but table", 0), 0u)
      << missing.out;
  EXPECT_NE(line.find("dblock history disable"), std::string::npos) << line;
}

TEST_P(CliDoctorTest, MissingMigrationsAreAFailureThatSaysWhatToRun) {
  std::vector<std::string> argv = cli("doctor", {});
  argv[3] = unique_name("none") + "_";  // a prefix with no tables
  const ProcessResult r = run(argv);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "migrations");
  const std::size_t shipped = builtin_migrations(backend().dialect).size();
  EXPECT_EQ(
      line.rfind("failure migrations: " + std::to_string(shipped) + " migration(s) not applied", 0),
      0u)
      << r.out;
  EXPECT_NE(line.find("to fix: run `dblock migrate up`"), std::string::npos) << line;
  EXPECT_EQ(line_of(r.out, "privileges").rfind("warning privileges: not checked", 0), 0u) << r.out;
  EXPECT_EQ(line_of(r.out, "cleaner").rfind("warning cleaner: not checked", 0), 0u) << r.out;
}

// A user that may read dblock's tables but not write them: the lock statements would fail, so
// doctor fails, naming each missing privilege; the cleaner's DELETE is a warning of its own.
TEST_P(CliDoctorTest, AUserWithoutWritePrivilegesIsAFailureNamingThem) {
  auto admin = backend().connect();
  const Dialect d = backend().dialect;
  const TableNames names(prefix_);
  const TestLogin login(*admin, d, "doctor-pw-1");
  const std::string& user = login.user;
  for (const auto& account : login.accounts) {
    for (const char* base : {"locks", "row_locks", "versions", "lock_waiters", "semaphores",
                             "semaphore_permits", "history", "schema_migrations"}) {
      admin->execute("GRANT SELECT ON " + names.qualified(d, base) + " TO " + account);
    }
  }
  const ProcessResult r =
      run_process(cli("doctor", {}), env(with_user(url_, user, login.password)));

  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(line_of(r.out, "migrations").rfind("ok migrations:", 0), 0u) << r.out;
  const std::string privileges = line_of(r.out, "privileges");
  EXPECT_EQ(privileges.rfind("failure privileges: this user lacks INSERT, UPDATE on", 0), 0u)
      << r.out;
  for (const char* base : {"locks", "row_locks", "versions", "semaphores", "semaphore_permits"}) {
    EXPECT_NE(privileges.find("INSERT, UPDATE on " + names.qualified(d, base)), std::string::npos)
        << privileges;
  }
  // Fair waiting deletes its queue places.
  EXPECT_NE(privileges.find("INSERT, UPDATE, DELETE on " + names.qualified(d, "lock_waiters")),
            std::string::npos)
      << privileges;
  EXPECT_EQ(privileges.find("SELECT"), std::string::npos) << privileges;
  // The GRANT that gives them, with the table in its schema and the user as the server knows it.
  const std::string schema =
      admin
          ->execute(d == Dialect::kPostgreSQL ? "SELECT current_schema() AS s"
                                              : "SELECT DATABASE() AS s")
          .at(0, "s")
          .value_or("");
  const std::string grantee =
      d == Dialect::kPostgreSQL ? "\"" + user + "\"" : "'" + user + "'@'127.0.0.1'";
  EXPECT_NE(privileges.find("to fix: GRANT INSERT, UPDATE ON " + quote_identifier(d, schema) + "." +
                            names.qualified(d, "locks") + " TO " + grantee + ";"),
            std::string::npos)
      << privileges;
  if (d == Dialect::kPostgreSQL) {
    EXPECT_NE(privileges.find("USAGE on sequence " + names.qualified(d, "row_lock_tokens")),
              std::string::npos)
        << privileges;
  }
  const std::string cleaner = line_of(r.out, "cleaner");
  EXPECT_EQ(cleaner.rfind("warning cleaner: this user cannot run the cleaner", 0), 0u) << r.out;
  EXPECT_NE(cleaner.find("DELETE on " + names.qualified(d, "locks")), std::string::npos) << cleaner;
}

// A user that may read none of dblock's tables (MySQL: one, or it could not log in to the
// database at all): what it lacks is a finding with the GRANTs, and the exit status the
// doctor's own (1), not the access-denied one (77).
TEST_P(CliDoctorTest, AUserThatMayReadNothingGetsFindingsNotAnAccessError) {
  auto admin = backend().connect();
  const Dialect d = backend().dialect;
  const TableNames names(prefix_);
  const TestLogin login(*admin, d, "doctor-pw-2");
  if (d != Dialect::kPostgreSQL) {
    for (const auto& account : login.accounts) {
      admin->execute("GRANT SELECT ON " + names.qualified(d, "versions") + " TO " + account);
    }
  }
  const auto env_of = [&] { return env(with_user(url_, login.user, login.password)); };
  const ProcessResult r = run_process(cli("doctor", {}), env_of());
  const ProcessResult json = run_process(cli("doctor", {"--json"}), env_of());
  const ProcessResult cleaner = run_process(cli("doctor", {"--role", "cleaner"}), env_of());

  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // Each check's line opens with what it may not use.
  const std::pair<std::string, std::string> openings[] = {
      {"migrations",
       "failure migrations: this user may not read " + names.qualified(d, "schema_migrations")},
      {"privileges", "failure privileges: this user lacks SELECT, INSERT, UPDATE on " +
                         names.qualified(d, "locks")}};
  for (const auto& [check, opening] : openings) {
    EXPECT_EQ(line_of(r.out, check).rfind(opening, 0), 0u) << r.out;
  }
  const std::string privileges = line_of(r.out, "privileges");
  EXPECT_NE(privileges.find("SELECT on " + names.qualified(d, "schema_migrations")),
            std::string::npos)
      << privileges;
  EXPECT_NE(privileges.find("to fix: GRANT SELECT, INSERT, UPDATE ON "), std::string::npos)
      << privileges;
  EXPECT_NE(privileges.find("schema/grants/"), std::string::npos) << privileges;
  EXPECT_EQ(json.exit_code, 1) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out).size(), kChecks.size()) << json.out;

  // As the cleaner it would lack DELETE (PostgreSQL: UPDATE too, for FOR UPDATE SKIP LOCKED).
  EXPECT_EQ(cleaner.exit_code, 1) << cleaner.out << cleaner.err;
  const std::string cleaner_privileges = line_of(cleaner.out, "privileges");
  EXPECT_EQ(cleaner_privileges.rfind(std::string("failure privileges: this user lacks SELECT, ") +
                                         (d == Dialect::kPostgreSQL ? "UPDATE, " : "") +
                                         "DELETE on " + names.qualified(d, "locks"),
                                     0),
            0u)
      << cleaner.out;
  EXPECT_EQ(line_of(cleaner.out, "cleaner"), "") << "the cleaner check is the privileges one";
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliDoctorTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
