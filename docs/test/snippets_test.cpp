// SPDX-License-Identifier: Apache-2.0
// Runs the documentation's C++ snippets (docs/snippets/*.cpp) against the test servers and checks
// that each does what its page says. Every snippet uses dblock's default table names, so each
// database gets a fresh database of its own for this run (dropped at the end), named from
// DBLOCK_TEST_PG_URL / DBLOCK_TEST_MYSQL_URL; a database that is not configured fails its tests.
// The "your code" functions the snippets declare are defined here and record their calls.
//
// Thread-safety: single-threaded, like the snippets.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "dblock/cleaner.hpp"
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"

#if DBLOCK_HAVE_LIBPQXX
#include <pqxx/pqxx>
#endif
#if DBLOCK_HAVE_MYSQL
#include <mysql.h>

#include "dblock/libmysqlclient.hpp"
#endif
#if DBLOCK_HAVE_SOCI
#include <soci/soci.h>
#endif
#if DBLOCK_HAVE_PROMETHEUS
#include <prometheus/registry.h>

#include "dblock/observer.hpp"
#endif

// --- The snippets' entry points (docs/snippets/*.cpp) -------------------------------------
void unique_key_examples(dblock::ConnectionSource& pool);
bool claim_voucher(dblock::UniqueKeyLock& locks, int user, int voucher);
bool run_job_step(dblock::UniqueKeyLock& locks, const std::string& job);
bool sell_voucher(dblock::ConnectionSource& pool, int voucher);
bool close_day_fenced(dblock::ConnectionSource& pool);
bool ship_order(dblock::RowLock& rows, long order);
int count_visit(dblock::ConnectionSource& pool, int page);
bool sell_one(dblock::Connection& conn, int voucher);
bool build_report_once(dblock::ConnectionSource& pool);
bool run_export_when_allowed(dblock::ConnectionSource& pool);
void read_then_write_prices(dblock::ConnectionSource& pool);
bool transfer(dblock::UniqueKeyLock& locks);
bool print_labels_once(dblock::UniqueKeyLock& locks);
bool reconcile(dblock::UniqueKeyLock& locks);
void export_accounts(dblock::UniqueKeyLock& locks, const std::vector<std::string>& accounts);
bool consume_queue(dblock::UniqueKeyLock& locks);
void run_scheduler(dblock::ConnectionSource& pool, const std::stop_token& shutdown);
bool print_in_turn(dblock::ConnectionSource& pool);
enum class Next { kDone, kBusy, kRetryLater, kCheckTheWork, kFixTheSetup };
Next post_ledger(dblock::UniqueKeyLock& locks);
std::unique_ptr<dblock::Pool> open_lock_pool();
dblock::CleanResult clean_expired(dblock::Connection& conn, std::chrono::milliseconds grace);
void migrate_at_startup(dblock::ConnectionSource& pool);
void migrate_elsewhere(dblock::Connection& conn);
int log_deployment_checks(dblock::Connection& conn);
std::size_t print_holders(dblock::Connection& conn);
#if DBLOCK_HAVE_LIBPQXX
bool import_with_my_connection(pqxx::connection& mine);
#endif
#if DBLOCK_HAVE_MYSQL
std::unique_ptr<dblock::Connection> open_for_dblock(const char* host, unsigned port,
                                                    const char* user, const char* password,
                                                    const char* database, MYSQL* handle);
#endif
#if DBLOCK_HAVE_SOCI
bool lock_through_soci(soci::connection_pool& pool, std::size_t size);
#endif
#if DBLOCK_HAVE_PROMETHEUS
void install_prometheus_metrics(prometheus::Registry& registry);
std::string metrics_page(prometheus::Registry& registry);
#endif

// --- "Your code", as the snippets call it ---------------------------------------------------
namespace seen {
int asset = 0;
std::int64_t asset_token = 0;
int reports = 0;
std::int64_t monthly_report_token = 0;
std::int64_t export_token = 0;
int prices_shown = 0;
std::int64_t prices_token = 0;
std::int64_t from_token = 0;
std::int64_t to_token = 0;
int ledger_posts = 0;
std::int64_t labels_token = 0;
int batches = 0;
std::vector<std::string> exported;
int messages = 0;
std::atomic<std::int64_t> scheduler_term{0};
}  // namespace seen

void move_asset(int asset, std::int64_t fencing_token) {
  seen::asset = asset;
  seen::asset_token = fencing_token;
}
void build_report() { ++seen::reports; }
void build_monthly_report(std::int64_t fencing_token) {
  seen::monthly_report_token = fencing_token;
}
void run_export(std::int64_t fencing_token) { seen::export_token = fencing_token; }
void show_prices() { ++seen::prices_shown; }
void store_prices(std::int64_t fencing_token) { seen::prices_token = fencing_token; }
void move_money(std::int64_t from_token, std::int64_t to_token) {
  seen::from_token = from_token;
  seen::to_token = to_token;
}
void post_ledger_entries() { ++seen::ledger_posts; }
void print_labels(std::int64_t fencing_token) { seen::labels_token = fencing_token; }
bool reconcile_next_batch() { return ++seen::batches < 3; }
void export_account(const std::string& account) { seen::exported.push_back(account); }
bool handle_next_message() { return ++seen::messages < 3; }
bool schedule_due_jobs(std::int64_t term) {
  seen::scheduler_term = term;
  return false;
}

namespace {

using namespace std::chrono_literals;

std::string random_suffix() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// `url` with its database replaced by `database` (the path after the authority).
std::string with_database(const std::string& url, const std::string& database) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) throw std::runtime_error("not a URL: no ://");
  auto path = url.find('/', scheme_end + 3);
  auto query = url.find('?', scheme_end + 3);
  if (path == std::string::npos || (query != std::string::npos && path > query)) {
    path = query == std::string::npos ? url.size() : query;
    return url.substr(0, path) + "/" + database + url.substr(path);
  }
  auto end = query == std::string::npos ? url.size() : query;
  return url.substr(0, path + 1) + database + url.substr(end);
}

// A database of its own for one dialect, created from the test server's URL and dropped at
// the end of the run.
struct DocsDatabase {
  std::string admin_url;  // the test server's URL, as given
  std::string url;        // the same server, the fresh database
  std::string name;
  dblock::Dialect dialect;
  std::unique_ptr<dblock::Pool> pool;

  DocsDatabase(const char* env, dblock::Dialect d) : dialect(d) {
    const char* value = std::getenv(env);
    if (value == nullptr || *value == '\0') {
      throw std::runtime_error(std::string(env) +
                               " is not set: run the docs tests through scripts/test.sh, or "
                               "start servers with scripts/dev-db.sh and eval its env");
    }
    admin_url = value;
    name = "dblock_docs_" + random_suffix();
    auto admin = dblock::open_connection(dblock::DatabaseUrl::resolve(admin_url));
    admin->execute(dialect == dblock::Dialect::kPostgreSQL
                       ? "CREATE DATABASE \"" + name + "\""
                       : "CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4");
    url = with_database(admin_url, name);
    pool = dblock::open_pool(dblock::DatabaseUrl::resolve(url));
    auto conn = pool->acquire();
    dblock::Migrator(*conn).up();
  }

  ~DocsDatabase() {
    pool.reset();
    try {
      auto admin = dblock::open_connection(dblock::DatabaseUrl::resolve(admin_url));
      admin->execute(dialect == dblock::Dialect::kPostgreSQL
                         ? "DROP DATABASE IF EXISTS \"" + name + "\" WITH (FORCE)"
                         : "DROP DATABASE IF EXISTS `" + name + "`");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "docs test: could not drop database %s: %s\n", name.c_str(), e.what());
    }
  }

  // $n on PostgreSQL, ? on MySQL.
  std::string param(int n) const {
    return dialect == dblock::Dialect::kPostgreSQL ? "$" + std::to_string(n) : "?";
  }
};

std::unique_ptr<DocsDatabase> g_postgresql;
std::unique_ptr<DocsDatabase> g_mysql;

DocsDatabase& database(dblock::Dialect dialect) {
  auto& slot = dialect == dblock::Dialect::kPostgreSQL ? g_postgresql : g_mysql;
  if (!slot) {
    slot = std::make_unique<DocsDatabase>(
        dialect == dblock::Dialect::kPostgreSQL ? "DBLOCK_TEST_PG_URL" : "DBLOCK_TEST_MYSQL_URL",
        dialect);
  }
  return *slot;
}

class DropDatabases : public ::testing::Environment {
 public:
  void TearDown() override {
    g_postgresql.reset();
    g_mysql.reset();
  }
};

// Runs one of the snippet programs with DBLOCK_URL set; returns its exit status and output.
struct ProgramRun {
  int status = -1;
  std::string output;
};
ProgramRun run_program(const std::string& path, const std::string& url, const std::string& args) {
  setenv("DBLOCK_URL", url.c_str(), 1);
  ProgramRun run;
  FILE* out = popen((path + " " + args + " 2>&1").c_str(), "r");
  if (out == nullptr) throw std::runtime_error("cannot start " + path);
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), out) != nullptr) run.output += buf.data();
  int rc = pclose(out);
  run.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  unsetenv("DBLOCK_URL");
  return run;
}

std::int64_t scalar(dblock::Connection& conn, const std::string& sql) {
  return conn.execute(sql).int64_at(0, 0);
}

class BothDatabases : public ::testing::TestWithParam<dblock::Dialect> {
 protected:
  DocsDatabase& db() { return database(GetParam()); }
};

std::string dialect_name(const ::testing::TestParamInfo<dblock::Dialect>& info) {
  return std::string(dblock::to_string(info.param));
}

INSTANTIATE_TEST_SUITE_P(Docs, BothDatabases,
                         ::testing::Values(dblock::Dialect::kPostgreSQL, dblock::Dialect::kMySQL),
                         dialect_name);

TEST_P(BothDatabases, ReadmeExampleHoldsTheLockAndRunsTheSection) {
  ProgramRun run = run_program(DBLOCK_DOCS_README_EXAMPLE, db().url, "");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("holding invoice:42, fencing token "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("one instance at a time runs this"), std::string::npos) << run.output;
}

#if DBLOCK_HAVE_PROMETHEUS
TEST_P(BothDatabases, PrometheusMetricsCountTheProcesssLocksWithTheWaitBucketsAskedFor) {
  prometheus::Registry registry;
  install_prometheus_metrics(registry);
  {
    dblock::UniqueKeyLock locks(*db().pool);
    EXPECT_TRUE(locks.try_acquire("docs:prometheus"));
  }
  dblock::set_observer(nullptr);
  const std::string page = metrics_page(registry);
  EXPECT_NE(page.find("dblock_acquisitions_total{outcome=\"acquired\",strategy=\"unique_key\"} 1"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("le=\"120\""), std::string::npos) << page;
  EXPECT_NE(page.find("dblock_leases_held{strategy=\"unique_key\"} 0"), std::string::npos) << page;
}
#endif

TEST_P(BothDatabases, UniqueKeyExamplesFenceAndRunEachSection) {
  seen::reports = 0;
  unique_key_examples(*db().pool);
  EXPECT_EQ(seen::asset, 42);
  EXPECT_GT(seen::asset_token, 0);
  EXPECT_EQ(seen::reports, 3);  // acquire, with_lock, LockableKey

  dblock::UniqueKeyLock locks(*db().pool);
  EXPECT_TRUE(claim_voucher(locks, 7, 9));
  EXPECT_FALSE(claim_voucher(locks, 7, 9));  // once per user and voucher
  EXPECT_TRUE(claim_voucher(locks, 8, 9));
}

TEST_P(BothDatabases, ASessionLeaseCommitsOnItsOwnConnection) {
  db().pool->acquire()->execute("CREATE TABLE ledger_days (closed int NOT NULL)");
  EXPECT_TRUE(close_day_fenced(*db().pool));
  auto conn = db().pool->acquire();
  EXPECT_EQ(conn->execute("SELECT closed FROM ledger_days").size(), 1u);
  conn->execute("DROP TABLE ledger_days");
}

TEST_P(BothDatabases, ANamedOwnerReentersAndGivesTheKeyBack) {
  dblock::UniqueKeyLock locks(*db().pool);
  EXPECT_TRUE(run_job_step(locks, "j1"));
  // Both holds were given back: another owner gets the key at once.
  EXPECT_TRUE(locks.try_acquire("batch:j1").has_value());
}

TEST_P(BothDatabases, SessionLockSkipsTheWorkWhileAnotherHoldsIt) {
  seen::monthly_report_token = 0;
  EXPECT_TRUE(build_report_once(*db().pool));
  EXPECT_GT(seen::monthly_report_token, 0);
  dblock::SessionLock other(*db().pool);
  auto held = other.try_acquire("report:2024-06", {.owner = dblock::Owner::named("other")});
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(build_report_once(*db().pool));
}

TEST_P(BothDatabases, SemaphoreGivesAPermit) {
  seen::export_token = 0;
  EXPECT_TRUE(run_export_when_allowed(*db().pool));
  EXPECT_GT(seen::export_token, 0);
}

TEST_P(BothDatabases, ReadWriteLockReadsThenWrites) {
  seen::prices_shown = 0;
  seen::prices_token = 0;
  read_then_write_prices(*db().pool);
  EXPECT_EQ(seen::prices_shown, 1);
  EXPECT_GT(seen::prices_token, 0);
}

TEST_P(BothDatabases, ALockDelayedLeaseReleasedInTimeFreesTheKeyAtOnce) {
  dblock::UniqueKeyLock locks(*db().pool);
  seen::labels_token = 0;
  EXPECT_TRUE(print_labels_once(locks));
  EXPECT_GT(seen::labels_token, 0);
  EXPECT_TRUE(locks.try_acquire("printer:3", {.owner = dblock::Owner::named("other")}));
}

// The two long jobs of the cancellation page, each run to its end under a lease held throughout.
TEST_P(BothDatabases, LongJobsWatchingTheirStopTokenRunToTheirEndAndFreeTheirKey) {
  dblock::UniqueKeyLock locks(*db().pool);
  seen::batches = seen::messages = 0;
  EXPECT_TRUE(reconcile(locks));
  EXPECT_TRUE(consume_queue(locks));
  EXPECT_EQ(seen::batches, 3);
  EXPECT_EQ(seen::messages, 3);
  for (const char* key : {"reconciler", "queue:orders"}) {
    EXPECT_TRUE(locks.try_acquire(key, {.owner = dblock::Owner::named("other")})) << key;
  }
}

// The async page's exports: every account exported, the one another process held once it let go.
TEST_P(BothDatabases, AsyncExportsWaitForTheAccountAnotherProcessHolds) {
  dblock::UniqueKeyLock locks(*db().pool);
  auto other = locks.try_acquire("export:b", {.owner = dblock::Owner::named("other")});
  ASSERT_TRUE(other);
  std::thread letting_go([&] {
    std::this_thread::sleep_for(300ms);
    other->release();
  });
  seen::exported.clear();
  export_accounts(locks, {"a", "b", "c"});
  letting_go.join();
  EXPECT_EQ(seen::exported, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_P(BothDatabases, TheSchedulerLeadsUntilItsWorkIsDoneAndStopsAtShutdown) {
  std::stop_source shutdown;
  seen::scheduler_term = 0;
  std::thread replica([&] { run_scheduler(*db().pool, shutdown.get_token()); });
  for (int i = 0; i < 1000 && seen::scheduler_term == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shutdown.request_stop();
  replica.join();
  EXPECT_GT(seen::scheduler_term, 0) << "the only candidate was never elected";
}

TEST_P(BothDatabases, LockSetHoldsBothAccounts) {
  dblock::UniqueKeyLock locks(*db().pool);
  seen::from_token = seen::to_token = 0;
  EXPECT_TRUE(transfer(locks));
  EXPECT_GT(seen::from_token, 0);
  EXPECT_GT(seen::to_token, 0);
  // Both were given back after the lambda: another owner gets each at once.
  EXPECT_TRUE(locks.try_acquire("account:4", {.owner = dblock::Owner::named("other")}));
  EXPECT_TRUE(locks.try_acquire("account:17", {.owner = dblock::Owner::named("other")}));
}

TEST_P(BothDatabases, FairLockServesAWaiter) { EXPECT_TRUE(print_in_turn(*db().pool)); }

TEST_P(BothDatabases, ErrorsNameWhatToDoNext) {
  seen::ledger_posts = 0;
  dblock::UniqueKeyLock locks(*db().pool);
  EXPECT_EQ(post_ledger(locks), Next::kDone);
  EXPECT_EQ(seen::ledger_posts, 1);
  // Tables that were never migrated: kUndefinedTable, which retrying cannot fix.
  dblock::UniqueKeyLock unmigrated(*db().pool, {.tables = dblock::TableNames("never_migrated_")});
  EXPECT_EQ(post_ledger(unmigrated), Next::kFixTheSetup);
  EXPECT_EQ(seen::ledger_posts, 1);
}

TEST_P(BothDatabases, OwnPoolOpensFromDblockUrl) {
  setenv("DBLOCK_URL", db().url.c_str(), 1);
  auto pool = open_lock_pool();
  unsetenv("DBLOCK_URL");
  auto conn = pool->acquire();
  EXPECT_EQ(scalar(*conn, "SELECT 1"), 1);
  EXPECT_EQ(conn->dialect(), GetParam());
}

TEST_P(BothDatabases, CleanerDeletesRowsPastTheGrace) {
  dblock::UniqueKeyLock locks(*db().pool);
  auto lease = locks.try_acquire("docs:clean", {.ttl = 20ms, .auto_renew = false});
  ASSERT_TRUE(lease.has_value());
  lease->release();  // freed, not deleted: the row keeps the key's last token
  std::this_thread::sleep_for(50ms);
  auto conn = db().pool->acquire();
  dblock::CleanResult r = clean_expired(*conn, 0ms);
  EXPECT_GE(r.tables["locks"], 1u);
  EXPECT_TRUE(r.complete);
}

TEST_P(BothDatabases, MigratorUpAndVerify) {
  migrate_at_startup(*db().pool);
  auto conn = db().pool->acquire();
  for (const auto& state : dblock::Migrator(*conn).status()) {
    EXPECT_EQ(state.status, dblock::MigrationState::Status::kApplied) << state.id();
  }
}

TEST_P(BothDatabases, DoctorFindsNoFailure) {
  auto conn = db().pool->acquire();
  EXPECT_EQ(log_deployment_checks(*conn), 0);
}

TEST_P(BothDatabases, ListLocksShowsTheHolder) {
  dblock::UniqueKeyLock locks(*db().pool);
  auto lease = locks.try_acquire("jobs:a");
  ASSERT_TRUE(lease.has_value());
  auto conn = db().pool->acquire();
  EXPECT_EQ(print_holders(*conn), 1u);
}

// --- PostgreSQL only: the snippets that write $n placeholders or use libpqxx ----------------

class PostgreSQLOnly : public ::testing::Test {
 protected:
  DocsDatabase& db() { return database(dblock::Dialect::kPostgreSQL); }
};

TEST_F(PostgreSQLOnly, GettingStartedMovesTheAssetWithAFencedWrite) {
  ProgramRun run = run_program(DBLOCK_DOCS_GETTING_STARTED, db().url, "alice");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("asset 1 now belongs to alice"), std::string::npos) << run.output;
  auto conn = db().pool->acquire();
  auto row = conn->execute("SELECT owner, fence FROM assets WHERE id = 1");
  EXPECT_EQ(row.at(0, "owner").value_or(""), "alice");
  EXPECT_GT(row.int64_at(0, "fence"), 0);
  // A second run takes the lock again with a larger token, so its write goes through too.
  run = run_program(DBLOCK_DOCS_GETTING_STARTED, db().url, "bob");
  EXPECT_EQ(run.status, 0) << run.output;
}

TEST_F(PostgreSQLOnly, RowLockSellsOnceAndShipsAnOrder) {
  {
    auto conn = db().pool->acquire();
    conn->execute("CREATE TABLE IF NOT EXISTS vouchers (id int PRIMARY KEY, stock int NOT NULL)");
    conn->execute("INSERT INTO vouchers VALUES (7, 1)");
    conn->execute("CREATE TABLE orders (id bigint PRIMARY KEY, state text NOT NULL)");
    conn->execute("INSERT INTO orders VALUES (5, 'new')");
  }
  EXPECT_TRUE(sell_voucher(*db().pool, 7));
  EXPECT_FALSE(sell_voucher(*db().pool, 7));  // none left
  dblock::RowLock rows(*db().pool);
  EXPECT_TRUE(ship_order(rows, 5));
  auto conn = db().pool->acquire();
  EXPECT_EQ(scalar(*conn, "SELECT stock FROM vouchers WHERE id = 7"), 0);
  EXPECT_EQ(conn->execute("SELECT state FROM orders WHERE id = 5").at(0, 0).value_or(""),
            "shipped");
}

TEST_F(PostgreSQLOnly, OptimisticCountsEveryVisitAndSellsOnce) {
  {
    auto conn = db().pool->acquire();
    conn->execute("CREATE TABLE pages (id int PRIMARY KEY, visits bigint NOT NULL)");
    conn->execute("INSERT INTO pages VALUES (1, 0)");
    conn->execute("CREATE TABLE IF NOT EXISTS vouchers (id int PRIMARY KEY, stock int NOT NULL)");
    conn->execute("INSERT INTO vouchers VALUES (21, 1)");
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(count_visit(*db().pool, 1), 1);
  auto conn = db().pool->acquire();
  EXPECT_EQ(scalar(*conn, "SELECT visits FROM pages WHERE id = 1"), 3);
  EXPECT_TRUE(sell_one(*conn, 21));
  EXPECT_FALSE(sell_one(*conn, 21));
}

TEST_F(PostgreSQLOnly, MigratorElsewhereUsesItsPrefixAndSchema) {
  auto conn = db().pool->acquire();
  migrate_elsewhere(*conn);
  EXPECT_EQ(scalar(*conn, "SELECT count(*) FROM locking.jobs_locks"), 0);
}

#if DBLOCK_HAVE_LIBPQXX
TEST_F(PostgreSQLOnly, LibpqxxConnectionTakesTurnsWithTheService) {
  {
    auto conn = db().pool->acquire();
    conn->execute("CREATE TABLE imports (name text PRIMARY KEY, started_at timestamptz)");
    conn->execute("INSERT INTO imports VALUES ('daily', NULL)");
  }
  pqxx::connection mine(db().url);  // libpq reads the test server's URL as it is
  EXPECT_TRUE(import_with_my_connection(mine));
  auto conn = db().pool->acquire();
  EXPECT_EQ(scalar(*conn, "SELECT count(*) FROM imports WHERE started_at IS NOT NULL"), 1);
}
#endif

#if DBLOCK_HAVE_SOCI
TEST_F(PostgreSQLOnly, SociPoolLendsSessions) {
  // SOCI's PostgreSQL backend takes libpq's keyword form, values quoted.
  dblock::DatabaseUrl url = dblock::DatabaseUrl::resolve(db().url);
  auto quoted = [](const std::string& v) {
    std::string out = "'";
    for (char c : v) {
      if (c == '\\' || c == '\'') out += '\\';
      out += c;
    }
    return out + "'";
  };
  const std::string conninfo = "host=" + quoted(url.host) +
                               " port=" + std::to_string(url.effective_port()) +
                               " dbname=" + quoted(url.database) + " user=" + quoted(url.user) +
                               " password=" + quoted(url.password);
  const std::size_t size = 2;
  soci::connection_pool pool(size);
  for (std::size_t i = 0; i < size; ++i) pool.at(i).open("postgresql", conninfo);
  EXPECT_TRUE(lock_through_soci(pool, size));
}
#endif

// --- MySQL/MariaDB only -------------------------------------------------------------------

#if DBLOCK_HAVE_MYSQL
TEST(MySQLOnly, AHandleOpenedWithFoundRowsIsWrappedAndOneWithoutIsRefused) {
  DocsDatabase& db = database(dblock::Dialect::kMySQL);
  dblock::DatabaseUrl url = dblock::DatabaseUrl::resolve(db.url);
  const std::string host = url.host.empty() ? "127.0.0.1" : url.host;
  const auto port = static_cast<unsigned>(url.effective_port());

  MYSQL* handle = mysql_init(nullptr);
  ASSERT_NE(handle, nullptr);
  {
    auto conn = open_for_dblock(host.c_str(), port, url.user.c_str(), url.password.c_str(),
                                url.database.c_str(), handle);
    auto source = dblock::borrow(*conn);
    dblock::UniqueKeyLock locks(*source);
    EXPECT_TRUE(locks.try_acquire("mysql:own-handle").has_value());
  }
  mysql_close(handle);

  MYSQL* plain = mysql_init(nullptr);
  ASSERT_NE(mysql_real_connect(plain, host.c_str(), url.user.c_str(), url.password.c_str(),
                               url.database.c_str(), port, nullptr, 0),
            nullptr)
      << mysql_error(plain);
  try {
    dblock::wrap_mysql(plain);
    ADD_FAILURE() << "wrap_mysql accepted a handle opened without CLIENT_FOUND_ROWS";
  } catch (const dblock::Error& e) {
    EXPECT_EQ(e.code(), dblock::ErrorCode::kInvalidArgument);
  }
  mysql_close(plain);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new DropDatabases);
  return RUN_ALL_TESTS();
}
