// SPDX-License-Identifier: Apache-2.0
// The migrator against every database x driver pair: status, up, verify, checksum drift,
// failures, and concurrent migrators (threads here; processes in cli_test.cpp).
#include "dblock/migrator.hpp"

#include <algorithm>
#include <cctype>
#include <thread>

#include "backends.hpp"
#include "dblock/open.hpp"
#include "dblock/table_names.hpp"
#include "dblock/unique_key_lock.hpp"
#include "sql/server_sql.hpp"
#include "sql_scanner.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

class MigratorTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    conn_ = backend().connect();
    prefix_ = unique_name("m") + "_";
  }
  void TearDown() override {
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, prefix_);
  }
  const Backend& backend() const { return GetParam(); }
  TableNames names() const { return TableNames(prefix_); }
  std::int64_t count(const std::string& sql) { return conn_->execute(sql).int64_at(0, 0); }
  std::string table(const std::string& base) const {
    return names().qualified(backend().dialect, base);
  }

  std::unique_ptr<Connection> conn_;
  std::string prefix_;
};

std::vector<Migration> custom_set(const std::string& second_body) {
  return {Migration{1, "first", "CREATE TABLE {{table:things}} (id INT PRIMARY KEY);"},
          Migration{2, "second", second_body}};
}

TEST_P(MigratorTest, FreshDatabaseIsPendingUpAppliesAndSecondUpIsANoop) {
  Migrator m(*conn_, names());
  auto before = m.status();
  ASSERT_FALSE(before.empty());
  for (const auto& s : before) EXPECT_EQ(s.status, MigrationState::Status::kPending) << s.id();

  auto applied = m.up();
  EXPECT_EQ(applied.size(), before.size());
  for (const auto& s : m.status()) {
    EXPECT_EQ(s.status, MigrationState::Status::kApplied) << s.id();
    EXPECT_EQ(s.applied_checksum, s.checksum);
    EXPECT_FALSE(s.applied_at.empty());
  }
  EXPECT_NO_THROW(m.verify());
  EXPECT_TRUE(m.up().empty());
  EXPECT_EQ(count("SELECT COUNT(*) FROM " + table("schema_migrations")),
            static_cast<std::int64_t>(before.size()));
  EXPECT_EQ(count("SELECT COUNT(*) FROM " + table("locks")), 0);
}

TEST_P(MigratorTest, VerifyOnAnEmptyDatabaseSaysToRunUp) {
  Migrator m(*conn_, names());
  expect_error([&] { m.verify(); }, ErrorCode::kUndefinedTable, "dblock migrate up",
               "verified an empty database");
}

TEST_P(MigratorTest, AppliesOnlyNewMigrationsAndVerifyRequiresAll) {
  auto set = custom_set("CREATE TABLE {{table:more}} (id INT PRIMARY KEY);");
  Migrator one(*conn_, names(), std::vector<Migration>{set[0]});
  EXPECT_EQ(one.up().size(), 1u);
  Migrator both(*conn_, names(), set);
  EXPECT_THROW(both.verify(), Error);  // 0002 pending
  auto applied = both.up();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].id(), "0002_second");
  EXPECT_NO_THROW(both.verify());
}

// A library newer than its tables (a migration left to apply) says what to run instead of
// failing on a missing column; a migration applied twice over (MySQL 8.0 has no ADD COLUMN IF
// NOT EXISTS: a migrator that stopped before recording it) goes through the second time.
TEST_P(MigratorTest, TablesOlderThanTheLibrarySayToMigrateAndAColumnAddedTwiceIsKept) {
  auto builtin = builtin_migrations(backend().dialect);
  // The newest migration the lock statements need (0007 adds a column they write); later ones
  // add objects only other services use.
  const auto needed = std::find_if(builtin.begin(), builtin.end(), [](const Migration& m) {
    return m.name == "previous_lease_ids";
  });
  ASSERT_NE(needed, builtin.end());
  std::vector<Migration> older(builtin.begin(), needed);
  Migrator(*conn_, names(), older).up();
  auto pool = open_pool(backend().url(), {.max_size = 2});
  UniqueKeyLock lock(*pool, {.tables = names()});
  expect_error([&] { lock.try_acquire("k"); }, ErrorCode::kUndefinedTable, "dblock migrate up",
               "a lock statement ran on tables older than this library");
  // That migration's statements run by hand, as a migrator that stopped before recording it had
  // run them; `up` then applies and records it (and those after it) all the same.
  const Migration& last = *needed;
  for (const auto& statement : detail::split_statements(
           detail::render_sql(last.sql, backend().dialect, names()), backend().dialect)) {
    conn_->execute(statement);
  }
  const auto applied = Migrator(*conn_, names()).up();
  ASSERT_EQ(applied.size(), static_cast<std::size_t>(builtin.end() - needed));
  EXPECT_EQ(applied[0].version, last.version);
  EXPECT_TRUE(lock.try_acquire("k"));
}

TEST_P(MigratorTest, ChangedChecksumIsRefusedNamingTheMigration) {
  Migrator original(*conn_, names(),
                    custom_set("CREATE TABLE {{table:more}} (id INT PRIMARY KEY);"));
  original.up();
  Migrator edited(*conn_, names(),
                  custom_set("CREATE TABLE {{table:more}} (id BIGINT PRIMARY KEY);"));
  auto states = edited.status();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[1].status, MigrationState::Status::kModified);
  expect_error([&] { edited.verify(); }, ErrorCode::kFailedPrecondition, "0002_second",
               "verified an edited migration");
  expect_error([&] { edited.up(); }, ErrorCode::kFailedPrecondition, "0002_second",
               "up ran over an edited migration");
}

TEST_P(MigratorTest, MigrationsUnknownHereFailVerifyButNotUp) {
  Migrator newer(*conn_, names(), custom_set("CREATE TABLE {{table:more}} (id INT);"));
  newer.up();
  Migrator older(*conn_, names(), std::vector<Migration>{custom_set("")[0]});
  auto states = older.status();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[1].status, MigrationState::Status::kUnknown);
  EXPECT_EQ(states[1].name, "second");
  EXPECT_TRUE(older.up().empty());
  EXPECT_THROW(older.verify(), Error);
}

TEST_P(MigratorTest, AFailingMigrationIsNamedAndNotRecorded) {
  Migrator m(*conn_, names(), custom_set("CREATE TABLE {{table:more}} (id INT); THIS IS NOT SQL;"));
  try {
    m.up();
    FAIL() << "a broken migration applied";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("0002_second"), std::string::npos) << what;
    EXPECT_NE(what.find("statement 2 of 2"), std::string::npos) << what;
  }
  auto states = m.status();
  if (backend().dialect == Dialect::kPostgreSQL) {
    // One transaction: nothing of the run stays, not even 0001 or the migrations table.
    EXPECT_EQ(states[0].status, MigrationState::Status::kPending);
  } else {
    EXPECT_EQ(states[0].status, MigrationState::Status::kApplied);
  }
  EXPECT_EQ(states[1].status, MigrationState::Status::kPending);
}

TEST_P(MigratorTest, HonoursASchemaAndCreatesIt) {
  std::string schema = unique_name("s");
  TableNames in_schema(std::string(TableNames::kDefaultPrefix), schema);
  Migrator m(*conn_, in_schema);
  m.up();
  EXPECT_NO_THROW(m.verify());
  EXPECT_EQ(count("SELECT COUNT(*) FROM " + in_schema.qualified(backend().dialect, "locks")), 0);
  backend().drop_schema(*conn_, schema);
}

// `up()` from every connection at once, one thread each: all succeed, and each migration is
// applied once under `tables`.
void expect_each_migration_applied_once(const Backend& b, Connection& checker,
                                        const std::vector<std::unique_ptr<Connection>>& conns,
                                        const TableNames& tables) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(conns.size());
  std::vector<std::size_t> applied(conns.size());
  for (std::size_t i = 0; i < conns.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        applied[i] = Migrator(*conns[i], tables).up().size();
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::size_t total = 0;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    EXPECT_EQ(failures[i], "") << "migrator " << i;
    total += applied[i];
  }
  const auto expected = builtin_migrations(b.dialect).size();
  EXPECT_EQ(total, expected);
  EXPECT_EQ(
      checker.execute("SELECT COUNT(*) FROM " + tables.qualified(b.dialect, "schema_migrations"))
          .int64_at(0, 0),
      static_cast<std::int64_t>(expected));
}

TEST_P(MigratorTest, ConcurrentMigratorsAllSucceedAndApplyEachMigrationOnce) {
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < 4; ++i) conns.push_back(backend().connect());
  expect_each_migration_applied_once(backend(), *conn_, conns, names());
}

// A connection whose transactions default to `level` ("repeatable read", "serializable"), the way
// a server, database or role configured so hands them out: on PostgreSQL through the startup
// option default_transaction_isolation (checked), on MySQL/MariaDB through the session's
// transaction_isolation.
std::unique_ptr<Connection> connect_with_isolation(const Backend& b, const std::string& level) {
  DatabaseUrl url = b.url();
  if (b.dialect == Dialect::kPostgreSQL) {
    std::string escaped;
    for (char c : level) escaped += c == ' ' ? std::string("\\ ") : std::string(1, c);
    url.params.emplace_back("options", "-c default_transaction_isolation=" + escaped);
    auto conn = open_connection(url);
    auto shown = conn->execute("SHOW default_transaction_isolation").at(0, 0);
    if (shown != level) {
      throw std::runtime_error("default_transaction_isolation is " + shown.value_or("NULL") +
                               ", not " + level);
    }
    return conn;
  }
  auto conn = open_connection(url);
  std::string upper;
  for (char c : level) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  conn->execute("SET SESSION TRANSACTION ISOLATION LEVEL " + upper);
  return conn;
}

// Under repeatable read or serializable a migrator must not take its snapshot before it waits
// for the migration lock, or it misses what the migrator before it applied.
TEST_P(MigratorTest, ConcurrentMigratorsUnderStricterIsolationAllSucceed) {
  constexpr int kMigrators = 20;
  for (std::string level : {"repeatable read", "serializable"}) {
    SCOPED_TRACE(level);
    const TableNames tables(unique_name("i") + "_");
    std::vector<std::unique_ptr<Connection>> conns;
    for (int i = 0; i < kMigrators; ++i) conns.push_back(connect_with_isolation(backend(), level));
    expect_each_migration_applied_once(backend(), *conn_, conns, tables);
    EXPECT_NO_THROW(Migrator(*conns[0], tables).verify());
    conns.clear();
    backend().drop_tables_with_prefix(*conn_, tables.prefix());
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, MigratorTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
