// SPDX-License-Identifier: Apache-2.0
// schema/grants/<dialect>.sql, the privileges each of dblock's roles needs, applied as written
// (role names, and PostgreSQL's schema, made unique to the test) to users that have nothing
// else; then each does its work logged in as itself, on every database x driver pair: the
// migrator `Migrator::up()`, the application every lock strategy, `dblock locks` and `dblock
// release`, the cleaner `dblock clean`; and `dblock doctor --role <role>` finds nothing missing.
// The files must grant every table the cleaner empties (sql/server_sql.hpp's CleanerSql::tables,
// the list `dblock clean` and `dblock doctor` work from) to every role: a new table without its
// GRANT lines fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "backends.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/history.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "process.hpp"
#include "sql/server_sql.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

const std::vector<std::string> kRoles = {"migrator", "app", "cleaner"};

struct GrantLine {
  std::string text;        // the statement as written
  std::string privileges;  // "SELECT, INSERT"
  std::string object;      // "public.dblock_locks", "SCHEMA public", "SEQUENCE ..."
  std::string role;        // "app"
};

// The GRANT statements of schema/grants/<file>, one per line.
std::vector<GrantLine> grant_lines(const std::string& file) {
  const std::string path = std::string(DBLOCK_SOURCE_DIR) + "/schema/grants/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  static const std::regex grant(
      R"(^GRANT ([A-Z, ]+) ON ((?:SCHEMA |SEQUENCE )?[A-Za-z_.]+) TO dblock_([a-z]+);$)");
  std::vector<GrantLine> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.starts_with("--")) continue;
    std::smatch m;
    if (!std::regex_match(line, m, grant)) {
      throw std::runtime_error(path + ": not a one-line GRANT to a dblock_ role: " + line);
    }
    out.push_back({line, m[1], m[2], m[3]});
  }
  return out;
}

// The tables the cleaner empties on `server`, and the migrations table.
std::vector<std::string> dblock_tables(Server server) {
  std::vector<std::string> out;
  for (const auto& t : detail::server_sql(server).cleaner.tables) out.emplace_back(t.base);
  out.emplace_back("schema_migrations");
  return out;
}

// The privileges `role` gets on `object` ("" when none).
std::string granted(const std::vector<GrantLine>& lines, const std::string& role,
                    const std::string& object) {
  for (const auto& l : lines) {
    if (l.role == role && l.object == object) return l.privileges;
  }
  return "";
}

TEST(GrantsFile, EveryTableTheCleanerEmptiesIsGrantedToEveryRole) {
  const auto postgresql = grant_lines("postgresql.sql");
  for (const std::string& base : dblock_tables(Server::kPostgreSQL)) {
    const std::string table = "public.dblock_" + base;
    EXPECT_NE(granted(postgresql, "app", table), "") << "postgresql.sql: app on " << table;
    EXPECT_NE(granted(postgresql, "cleaner", table), "") << "postgresql.sql: cleaner on " << table;
  }
  // PostgreSQL's migrator creates what it needs in the schema and owns it.
  EXPECT_EQ(granted(postgresql, "migrator", "SCHEMA public"), "USAGE, CREATE");
  EXPECT_EQ(granted(postgresql, "app", "SEQUENCE public.dblock_row_lock_tokens"), "USAGE");
  for (Server server : {Server::kMySQL, Server::kMariaDB}) {
    const auto mysql = grant_lines("mysql.sql");
    for (const std::string& base : dblock_tables(server)) {
      for (const std::string& role : kRoles) {
        EXPECT_NE(granted(mysql, role, "dblock_" + base), "")
            << "mysql.sql: " << role << " on dblock_" << base;
      }
    }
  }
}

class GrantsTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
    admin_ = backend().connect();
    stem_ = unique_name("g");
    schema_ = stem_ + "_s";
    if (postgresql()) {
      admin_->execute("CREATE SCHEMA " + schema_);
      for (const auto& role : kRoles) {
        admin_->execute("CREATE ROLE " + account(role) + " LOGIN PASSWORD '" + kPassword + "'");
        // Where the role's unqualified names go, as the file's `public` does for a default set-up.
        admin_->execute("ALTER ROLE " + account(role) + " SET search_path = " + schema_);
      }
    } else {
      admin_->execute("CREATE DATABASE " + schema_);
      for (const auto& role : kRoles) {
        admin_->execute("CREATE USER " + account(role) + " IDENTIFIED BY '" + kPassword + "'");
      }
    }
  }
  void TearDown() override {
    if (!admin_ || admin_->broken()) admin_ = backend().connect();
    if (postgresql()) {
      admin_->execute("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE");
      for (const auto& role : kRoles) {
        admin_->execute("DROP OWNED BY " + account(role));
        admin_->execute("DROP ROLE " + account(role));
      }
    } else {
      admin_->execute("DROP DATABASE IF EXISTS " + schema_);
      for (const auto& role : kRoles) admin_->execute("DROP USER " + account(role));
    }
  }

  const Backend& backend() const { return GetParam(); }
  bool postgresql() const { return backend().dialect == Dialect::kPostgreSQL; }
  std::string user(const std::string& role) const { return stem_ + "_" + role; }
  std::string account(const std::string& role) const {
    return postgresql() ? user(role) : "'" + user(role) + "'@'%'";
  }

  // Runs the file's lines for `role`, as written but for the names, as the administrator.
  void apply_grants(const std::string& role) {
    if (!postgresql()) admin_->execute("USE " + schema_);
    int applied = 0;
    for (const GrantLine& line : grant_lines(postgresql() ? "postgresql.sql" : "mysql.sql")) {
      if (line.role != role) continue;
      std::string sql = std::regex_replace(line.text, std::regex("\\bdblock_" + role + ";$"),
                                           account(role) + ";");
      if (postgresql()) sql = std::regex_replace(sql, std::regex("\\bpublic\\b"), schema_);
      admin_->execute(sql);
      ++applied;
    }
    if (!postgresql()) admin_->execute("USE " + backend().url().database);
    ASSERT_GT(applied, 0) << "no GRANT for " << role;
  }

  // The pair's URL for `role`'s user, the password left to DBLOCK_PASSWORD. MySQL: the test's
  // database is the default one, where the file's unqualified names went.
  DatabaseUrl url_of(const std::string& role) const {
    DatabaseUrl url = backend().url();
    url.user = user(role);
    url.password.clear();
    if (!postgresql()) url.database = schema_;
    return url;
  }
  std::unique_ptr<Pool> pool_of(const std::string& role) const {
    DatabaseUrl url = url_of(role);
    url.password = kPassword;
    return open_pool(url, {.max_size = 4});
  }
  // `dblock <args...>` logged in as `role`.
  ProcessResult cli(const std::string& role, std::vector<std::string> args) const {
    args.insert(args.begin(), DBLOCK_CLI_PATH);
    return run_process(args,
                       {{"DBLOCK_URL", url_of(role).redacted()}, {"DBLOCK_PASSWORD", kPassword}});
  }
  // The doctor's check lines that are not "ok", for `role`; its exit code first.
  std::string doctor_not_ok(const std::string& role, int* exit_code) const {
    const ProcessResult r = cli(role, {"doctor", "--role", role});
    *exit_code = r.exit_code;
    std::istringstream in(r.out);
    std::string line, out;
    while (std::getline(in, line)) {
      if (!line.starts_with("ok ")) out += line + "\n";
    }
    return out + r.err;
  }

  static constexpr const char* kPassword = "grants-Test-pw-7";
  std::unique_ptr<Connection> admin_;
  std::string stem_;
  std::string schema_;
};

TEST_P(GrantsTest, EachRoleDoesItsWorkWithTheGrantsOfTheFileAndNoMore) {
  // The migrator: creates every table (PostgreSQL: owns them).
  apply_grants("migrator");
  {
    auto pool = pool_of("migrator");
    auto conn = pool->acquire();
    EXPECT_EQ(Migrator(*conn).up().size(), builtin_migrations(backend().dialect).size());
    EXPECT_NO_THROW(Migrator(*conn).verify());
    // The history's triggers, which then write with this role's rights whoever ends a hold.
    enable_history(*conn);
    EXPECT_TRUE(history_enabled(*conn));
  }
  int code = -1;
  std::string problems = doctor_not_ok("migrator", &code);
  EXPECT_EQ(code, 0) << problems;
  EXPECT_EQ(problems, "");

  // The application: every strategy's statements, and the operators' commands.
  apply_grants("app");
  {
    auto pool = pool_of("app");
    LockOptions brief;
    brief.ttl = milliseconds(1);  // expires at once: rows for the cleaner
    brief.auto_renew = false;

    UniqueKeyLock locks(*pool);
    auto lease = locks.try_acquire("k");
    ASSERT_TRUE(lease);
    EXPECT_TRUE(lease->renew());
    auto again = locks.try_acquire("k");  // re-entered
    ASSERT_TRUE(again);
    EXPECT_EQ(again->release(), ReleaseOutcome::kDecremented);
    EXPECT_TRUE(locks.claim("claimed"));
    ASSERT_TRUE(locks.try_acquire("expired", brief));
    // Kept to the end of the block (its release then finds it expired), for the cleaner.
    const auto ran_out = locks.try_acquire("ran-out", brief);
    ASSERT_TRUE(ran_out);

    UniqueKeyLock fair(*pool, {.fair = true});
    auto head = fair.try_acquire("queue");
    ASSERT_TRUE(head);
    LockOptions other;
    other.owner = Owner::named("other");
    // Takes a place in the queue, and leaves it (DELETE) when the wait ends.
    EXPECT_FALSE(fair.acquire("queue", milliseconds(300), other));
    EXPECT_EQ(head->release(), ReleaseOutcome::kReleased);

    RowLock rows(*pool);
    auto row = rows.try_acquire("row");
    ASSERT_TRUE(row);
    EXPECT_EQ(row->release(), ReleaseOutcome::kReleased);

    OptimisticLock versions(*pool);
    auto version = versions.try_acquire("version");
    ASSERT_TRUE(version);
    EXPECT_EQ(version->release(), ReleaseOutcome::kReleased);

    Semaphore permits(*pool, 2);
    auto permit = permits.try_acquire("sem");
    ASSERT_TRUE(permit);
    EXPECT_EQ(permit->release(), ReleaseOutcome::kReleased);
    ASSERT_TRUE(permits.try_acquire("sem-expired", brief));

    ReadWriteLock rw(*pool);
    auto reader = rw.reader().try_acquire("rw");
    ASSERT_TRUE(reader);
    reader->release();
    auto writer = rw.writer().try_acquire("rw");
    ASSERT_TRUE(writer);
    writer->release();

    SessionLock session(*pool);
    auto native = session.try_acquire("native");
    ASSERT_TRUE(native);
    EXPECT_EQ(native->release(), ReleaseOutcome::kReleased);

    auto conn = pool->acquire();
    const auto listed = list_locks(*conn, TableNames(), "k");
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_TRUE(release_lock_row(*conn, TableNames(), listed[0]));
    list_permits(*conn);
    const auto ended = read_history(*conn, TableNames(), "k");
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].ended_how, HoldEnd::kForceReleased);
  }
  const ProcessResult locks_cli = cli("app", {"locks", "--json"});
  EXPECT_EQ(locks_cli.exit_code, 0) << locks_cli.err;
  problems = doctor_not_ok("app", &code);
  EXPECT_EQ(code, 0) << problems;
  // Only the note that this user cannot also clean.
  EXPECT_TRUE(problems.starts_with("warning cleaner: this user cannot run the cleaner"))
      << problems;
  EXPECT_EQ(std::count(problems.begin(), problems.end(), '\n'), 1) << problems;

  // The cleaner: every table it empties.
  apply_grants("cleaner");
  std::this_thread::sleep_for(milliseconds(20));
  const ProcessResult clean = cli("cleaner", {"clean", "--grace", "1ms", "--json"});
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("\"complete\":true"), std::string::npos) << clean.out;
  EXPECT_EQ(clean.out.find("\"deleted\":0,"), std::string::npos) << clean.out;
  problems = doctor_not_ok("cleaner", &code);
  EXPECT_EQ(code, 0) << problems;
  EXPECT_EQ(problems, "");
  // The cleaner's deletion of a hold that ran out was recorded, with the trigger's rights.
  const auto cleaned = read_history(*pool_of("app")->acquire(), TableNames(), "ran-out");
  ASSERT_EQ(cleaned.size(), 1u);
  EXPECT_EQ(cleaned[0].ended_how, HoldEnd::kCleaned);
}

INSTANTIATE_TEST_SUITE_P(Pairs, GrantsTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
