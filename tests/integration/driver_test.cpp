// SPDX-License-Identifier: Apache-2.0
// The driver contract, run against every database x driver pair.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "backends.hpp"
#include "dblock/open.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {
namespace {

class DriverTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    conn_ = backend().connect();
    table_ = unique_name("drv");
    std::string key_type = backend().dialect == Dialect::kPostgreSQL ? "text" : "VARCHAR(64)";
    std::string text_type = backend().dialect == Dialect::kPostgreSQL ? "text" : "LONGTEXT";
    std::string real_type =
        backend().dialect == Dialect::kPostgreSQL ? "double precision" : "DOUBLE";
    conn_->execute("CREATE TABLE " + t() + " (k " + key_type + " NOT NULL PRIMARY KEY, n BIGINT, " +
                   "s " + text_type + ", d " + real_type + ")");
  }
  void TearDown() override {
    if (!conn_ || conn_->broken()) conn_ = backend().connect();
    conn_->execute("DROP TABLE IF EXISTS " + t());
  }

  const Backend& backend() const { return GetParam(); }
  std::string t() const { return quote_identifier(backend().dialect, table_); }
  std::string p(int n) const { return backend().param(n); }
  std::string insert_sql() const {
    return "INSERT INTO " + t() + " (k, n, s, d) VALUES (" + p(1) + ", " + p(2) + ", " + p(3) +
           ", " + p(4) + ")";
  }
  std::string select_sql() const { return "SELECT k, n, s, d FROM " + t() + " WHERE k = " + p(1); }

  std::unique_ptr<Connection> conn_;
  std::string table_;
};

TEST_P(DriverTest, ReportsItsDialectAndDescribesItselfWithoutPassword) {
  EXPECT_EQ(conn_->dialect(), backend().dialect);
  std::string d = conn_->describe();
  EXPECT_FALSE(d.empty());
  auto url = backend().url();
  EXPECT_EQ(d.find(url.password), std::string::npos) << d;
  EXPECT_FALSE(conn_->broken());
  EXPECT_FALSE(conn_->in_transaction());
}

// The server is what the server says it is: MariaDB's version string names it, MySQL's does not.
TEST_P(DriverTest, ReportsTheServerItTalksTo) {
  const std::string version = conn_->execute("SELECT VERSION() AS v").at(0, "v").value_or("");
  Server expected = Server::kMySQL;
  if (backend().dialect == Dialect::kPostgreSQL) {
    expected = Server::kPostgreSQL;
  } else if (version.find("MariaDB") != std::string::npos) {
    expected = Server::kMariaDB;
  }
  EXPECT_EQ(to_string(conn_->server()), to_string(expected)) << version;
  EXPECT_EQ(dialect_of(conn_->server()), backend().dialect);
}

TEST_P(DriverTest, RoundTripsBoundValues) {
  const std::string quoted = "it's \"quoted\" \\ back; -- not a comment";
  const std::string unicode = "Grüße, 世界, 🔒";
  const std::string big(10000, 'x');
  conn_->execute(insert_sql(), {Value("a"), Value(-9000000000LL), Value(quoted), Value(2.5)});
  conn_->execute(insert_sql(), {Value("b"), Value(), Value(unicode), Value()});
  conn_->execute(insert_sql(), {Value("c"), Value(7), Value(big), Value(-1e300)});

  auto a = conn_->execute(select_sql(), {Value("a")});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a.int64_at(0, "n"), -9000000000LL);
  EXPECT_EQ(a.at(0, "s"), quoted);
  EXPECT_EQ(std::stod(*a.at(0, "d")), 2.5);

  auto b = conn_->execute(select_sql(), {Value("b")});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_FALSE(b.at(0, "n").has_value());
  EXPECT_FALSE(b.at(0, "d").has_value());
  EXPECT_EQ(b.at(0, "s"), unicode);

  auto c = conn_->execute(select_sql(), {Value("c")});
  EXPECT_EQ(c.at(0, "s"), big);
  EXPECT_EQ(std::stod(*c.at(0, "d")), -1e300);

  EXPECT_TRUE(conn_->execute(select_sql(), {Value("missing")}).empty());
  auto cols = conn_->execute(select_sql(), {Value("a")}).columns();
  EXPECT_EQ(cols, (std::vector<std::string>{"k", "n", "s", "d"}));
}

TEST_P(DriverTest, KeysAreDataNeverSql) {
  const std::string evil = "x'); DROP TABLE " + table_ + "; --";
  conn_->execute(insert_sql(), {Value(evil), Value(1), Value(), Value()});
  auto r = conn_->execute(select_sql(), {Value(evil)});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.at(0, "k"), evil);
}

TEST_P(DriverTest, AffectedRowsCountMatchedRowsEvenWhenNothingChanges) {
  conn_->execute(insert_sql(), {Value("a"), Value(1), Value("s"), Value()});
  std::string update = "UPDATE " + t() + " SET n = " + p(1) + " WHERE k = " + p(2);
  EXPECT_EQ(conn_->execute(update, {Value(2), Value("a")}).affected_rows(), 1u);
  // Same value again: MySQL would say 0 without CLIENT_FOUND_ROWS (or the SOCI workaround).
  EXPECT_EQ(conn_->execute(update, {Value(2), Value("a")}).affected_rows(), 1u);
  EXPECT_EQ(conn_->execute(update, {Value(2), Value("nope")}).affected_rows(), 0u);
  std::string del = "DELETE FROM " + t() + " WHERE k = " + p(1);
  EXPECT_EQ(conn_->execute(del, {Value("a")}).affected_rows(), 1u);
}

// Each statement runs once, with parameters or without: an UPDATE that adds one adds one, and an
// INSERT run twice would fail on its key. (SOCI 4.1 runs a statement without a result set twice
// when its rows are read into a dynamic soci::row.)
TEST_P(DriverTest, EachStatementRunsOnce) {
  conn_->execute(insert_sql(), {Value("a"), Value(0), Value(), Value()});
  EXPECT_EQ(conn_->execute("UPDATE " + t() + " SET n = n + 1 WHERE k = " + p(1), {Value("a")})
                .affected_rows(),
            1u);
  conn_->execute("UPDATE " + t() + " SET n = n + 1");
  conn_->execute("INSERT INTO " + t() + " (k, n) VALUES ('b', 0)");
  EXPECT_EQ(conn_->execute(select_sql(), {Value("a")}).int64_at(0, "n"), 2);
  EXPECT_EQ(conn_->execute("SELECT count(*) AS c FROM " + t()).int64_at(0, "c"), 2);
}

// A statement given more parameters than it has placeholders is the caller's mistake: it fails,
// and the connection goes on (PostgreSQL reports it as a protocol violation, SQLSTATE 08P01,
// whose class otherwise means a lost connection).
TEST_P(DriverTest, TheWrongNumberOfParametersFailsAndTheConnectionGoesOn) {
  try {
    conn_->execute(select_sql(), {Value("a"), Value("surplus")});
    FAIL() << "no error for two parameters to one placeholder";
  } catch (const Error& e) {
    EXPECT_NE(e.code(), ErrorCode::kConnectionLost) << e.what();
    if (backend().dialect == Dialect::kPostgreSQL && backend().driver != "soci") {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_FALSE(conn_->broken());
  conn_->execute(insert_sql(), {Value("a"), Value(1), Value(), Value()});
  EXPECT_EQ(conn_->execute(select_sql(), {Value("a")}).size(), 1u);
}

TEST_P(DriverTest, ClassifiesUniqueViolation) {
  conn_->execute(insert_sql(), {Value("dup"), Value(1), Value(), Value()});
  try {
    conn_->execute(insert_sql(), {Value("dup"), Value(2), Value(), Value()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUniqueViolation) << e.what();
  }
  EXPECT_FALSE(conn_->broken());
  EXPECT_EQ(conn_->execute(select_sql(), {Value("dup")}).int64_at(0, "n"), 1);
}

TEST_P(DriverTest, ClassifiesMissingTableWithAdvice) {
  try {
    conn_->execute("SELECT * FROM " + quote_identifier(backend().dialect, unique_name("none")));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUndefinedTable) << e.what();
    EXPECT_NE(std::string(e.what()).find("dblock migrate up"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(conn_->broken());
}

TEST_P(DriverTest, TransactionsCommitAndRollBack) {
  conn_->begin();
  EXPECT_TRUE(conn_->in_transaction());
  conn_->execute(insert_sql(), {Value("gone"), Value(1), Value(), Value()});
  conn_->rollback();
  EXPECT_FALSE(conn_->in_transaction());
  EXPECT_TRUE(conn_->execute(select_sql(), {Value("gone")}).empty());

  conn_->begin();
  conn_->execute(insert_sql(), {Value("kept"), Value(1), Value(), Value()});
  conn_->commit();
  EXPECT_FALSE(conn_->in_transaction());
  auto other = backend().connect();
  EXPECT_EQ(other->execute(select_sql(), {Value("kept")}).size(), 1u);
}

// Misuse is a failed precondition on every driver (fix the program; retrying cannot help), and
// the misused connection stays usable.
TEST_P(DriverTest, MisuseIsAFailedPrecondition) {
  auto code_of = [](auto&& fn) -> std::optional<ErrorCode> {
    try {
      fn();
    } catch (const Error& e) {
      EXPECT_EQ(e.retry_scope(), RetryScope::kNone) << e.what();
      return e.code();
    }
    return std::nullopt;
  };
  EXPECT_EQ(code_of([&] { conn_->commit(); }), ErrorCode::kFailedPrecondition);
  conn_->begin();
  EXPECT_EQ(code_of([&] { conn_->begin(); }), ErrorCode::kFailedPrecondition);
  conn_->rollback();
  EXPECT_EQ(code_of([&] { conn_->execute("SELECT 1 AS one").at(0, "two"); }),
            ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(conn_->broken());
  EXPECT_EQ(conn_->execute("SELECT 1 AS one").int64_at(0, "one"), 1);
}

TEST_P(DriverTest, NowaitOnALockedRowFailsAtOnce) {
  conn_->execute(insert_sql(), {Value("row"), Value(1), Value(), Value()});
  auto holder = backend().connect();
  holder->begin();
  holder->execute(select_sql() + " FOR UPDATE", {Value("row")});
  auto started = std::chrono::steady_clock::now();
  try {
    conn_->begin();
    conn_->execute(select_sql() + " FOR UPDATE NOWAIT", {Value("row")});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), backend().nowait_code(*holder)) << e.what();
  }
  conn_->rollback();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  holder->rollback();
}

TEST_P(DriverTest, ClassifiesDeadlock) {
  conn_->execute(insert_sql(), {Value("r1"), Value(1), Value(), Value()});
  conn_->execute(insert_sql(), {Value("r2"), Value(2), Value(), Value()});
  auto other = backend().connect();
  std::string lock = "UPDATE " + t() + " SET n = n + 1 WHERE k = " + p(1);
  conn_->begin();
  other->begin();
  conn_->execute(lock, {Value("r1")});
  other->execute(lock, {Value("r2")});
  std::optional<Error> second_error;
  std::thread crossing([&] {
    try {
      other->execute(lock, {Value("r1")});
    } catch (const Error& e) {
      second_error = e;
      other->rollback();  // lets the main thread's statement finish
    }
  });
  std::optional<Error> first_error;
  try {
    conn_->execute(lock, {Value("r2")});
  } catch (const Error& e) {
    first_error = e;
  }
  // Exactly one side is the victim; roll it back so the other can finish.
  if (first_error) conn_->rollback();
  crossing.join();
  ASSERT_NE(first_error.has_value(), second_error.has_value());
  const Error& victim = first_error ? *first_error : *second_error;
  EXPECT_EQ(victim.code(), ErrorCode::kDeadlock) << victim.what();
  EXPECT_TRUE(victim.retryable());
  if (conn_->in_transaction()) conn_->rollback();
  if (other->in_transaction()) other->rollback();
}

TEST_P(DriverTest, KilledSessionIsReportedLostAndBroken) {
  auto victim = backend().connect();
  auto id = backend().session_id(*victim);
  backend().kill_session(*conn_, id);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  try {
    victim->execute("SELECT 1");
    FAIL() << "the killed session still answered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
  EXPECT_TRUE(victim->broken());
  victim->rollback();  // must not throw on a broken connection
  try {
    victim->execute("SELECT 1");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost);
  }
}

int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // nothing listens there now
  return ntohs(addr.sin_port);
}

TEST_P(DriverTest, UnreachableServerIsConnectFailed) {
  auto url = backend().url();
  url.host = "127.0.0.1";
  url.port = closed_port();
  try {
    open_connection(url);
    FAIL() << "connected to a closed port";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kConnectFailed) << what;
    EXPECT_EQ(what.find(url.password), std::string::npos) << what;
    EXPECT_NE(what.find("server is running"), std::string::npos) << what;
  }
}

TEST_P(DriverTest, PoolSharesConnectionsAcrossThreads) {
  auto pool = open_pool(backend().url(), {.max_size = 3});
  std::string bump = "UPDATE " + t() + " SET n = n + 1 WHERE k = " + p(1);
  conn_->execute(insert_sql(), {Value("ctr"), Value(0), Value(), Value()});
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 20; ++j) pool->acquire()->execute(bump, {Value("ctr")});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(conn_->execute(select_sql(), {Value("ctr")}).int64_at(0, "n"), 120);
  EXPECT_LE(pool->open_count(), 3u);
}

TEST_P(DriverTest, PoolReplacesAKilledConnection) {
  auto pool = open_pool(backend().url(), {.max_size = 1});
  std::int64_t first_id = 0;
  {
    auto c = pool->acquire();
    first_id = backend().session_id(*c);
    backend().kill_session(*conn_, first_id);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_THROW(c->execute("SELECT 1"), Error);
  }
  auto c = pool->acquire();
  EXPECT_NE(backend().session_id(*c), first_id);
}

TEST_P(DriverTest, ReadsColumnsOfUnusualTypesAsText) {
  if (backend().dialect == Dialect::kPostgreSQL) {
    // void (pg_notify, pg_sleep), uuid and interval: SOCI 4.0 cannot describe them.
    auto r = conn_->execute(
        "SELECT pg_sleep(0) AS v, '00000000-0000-0000-0000-00000000000a'::uuid AS u,"
        " interval '1 day' AS i, CASE WHEN false THEN pg_sleep(0) END AS n, 7 AS k");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r.columns(), (std::vector<std::string>{"v", "u", "i", "n", "k"}));
    EXPECT_EQ(r.at(0, "v"), "");
    EXPECT_EQ(r.at(0, "u"), "00000000-0000-0000-0000-00000000000a");
    EXPECT_EQ(r.at(0, "i"), "1 day");
    EXPECT_FALSE(r.at(0, "n").has_value());
    EXPECT_EQ(r.int64_at(0, "k"), 7);
    EXPECT_EQ(conn_->execute("SELECT pg_sleep(0) FROM generate_series(1, 3)").size(), 3u);
  } else {
    auto r = conn_->execute("SELECT SLEEP(0) AS v, CAST('2024-01-02 03:04:05' AS DATETIME) AS t");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r.at(0, "v"), "0");
    EXPECT_EQ(r.at(0, "t"), "2024-01-02 03:04:05");
  }
}

TEST_P(DriverTest, LastInsertIdCarriesAValueBack) {
  if (backend().dialect == Dialect::kPostgreSQL) {
    EXPECT_EQ(
        conn_->execute(insert_sql(), {Value("a"), Value(1), Value(), Value()}).last_insert_id(),
        0u);
    EXPECT_EQ(conn_->execute(select_sql(), {Value("a")}).last_insert_id(), 0u);
    return;
  }
  // Insert a token, or replace the row's token when it holds the expected one, and report the
  // token the statement set; LAST_INSERT_ID(0) (row left alone) reports 0.
  const std::string upsert =
      "INSERT INTO " + t() +
      " (k, n) VALUES (?, LAST_INSERT_ID(?)) ON DUPLICATE KEY UPDATE n ="
      " CASE WHEN n = ? THEN LAST_INSERT_ID(?) ELSE n + LAST_INSERT_ID(0) END";
  auto n_of = [&](const char* key) {
    return conn_->execute(select_sql(), {Value(key)}).int64_at(0, "n");
  };
  // Prepared statements (parameters).
  EXPECT_EQ(conn_->execute(upsert, {Value("k"), Value(41), Value(0), Value(0)}).last_insert_id(),
            41u);
  // A SELECT sets nothing (the client library still holds the previous statement's value).
  EXPECT_EQ(conn_->execute(select_sql(), {Value("k")}).last_insert_id(), 0u);
  EXPECT_EQ(n_of("k"), 41);
  EXPECT_EQ(conn_->execute(upsert, {Value("k"), Value(7), Value(41), Value(9000000000LL)})
                .last_insert_id(),
            9000000000u);
  EXPECT_EQ(n_of("k"), 9000000000LL);
  EXPECT_EQ(conn_->execute(upsert, {Value("k"), Value(7), Value(41), Value(43)}).last_insert_id(),
            0u);
  EXPECT_EQ(n_of("k"), 9000000000LL);

  // The text protocol (no parameters).
  const std::string text_upsert = "INSERT INTO " + t() +
                                  " (k, n) VALUES ('t', LAST_INSERT_ID(5)) ON DUPLICATE KEY"
                                  " UPDATE n = CASE WHEN n = 5 THEN LAST_INSERT_ID(6)"
                                  " ELSE n + LAST_INSERT_ID(0) END";
  EXPECT_EQ(conn_->execute(text_upsert).last_insert_id(), 5u);
  EXPECT_EQ(conn_->execute("SELECT 1 AS one").last_insert_id(), 0u);
  EXPECT_EQ(conn_->execute(text_upsert).last_insert_id(), 6u);
  EXPECT_EQ(conn_->execute(text_upsert).last_insert_id(), 0u);
  EXPECT_EQ(n_of("t"), 6);
}

TEST_P(DriverTest, NotificationsArriveWithinARoundTrip) {
  using std::chrono::milliseconds;
  using Clock = std::chrono::steady_clock;
  auto listener = backend().connect();
  if (backend().dialect != Dialect::kPostgreSQL) {
    EXPECT_FALSE(listener->supports_notifications());
    EXPECT_THROW(listener->wait_for_notifications(milliseconds(10)), Error);
    return;
  }
  ASSERT_TRUE(listener->supports_notifications());
  const std::string channel = unique_name("chan");
  listener->listen(channel);
  auto sender = backend().connect();
  auto notify = [&](Connection& c, const std::string& payload) {
    c.execute("SELECT pg_notify($1, $2)", {Value(channel), Value(payload)});
  };

  // A waiting listener wakes as soon as another session notifies. The latency measured here
  // includes the sender's own round trip.
  Clock::time_point sending;
  std::jthread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    sending = Clock::now();
    notify(*sender, "first");
  });
  auto started = Clock::now();
  auto got = listener->wait_for_notifications(milliseconds(5000));
  auto received = Clock::now();
  later.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].channel, channel);
  EXPECT_EQ(got[0].payload, "first");
  EXPECT_LT(received - started, milliseconds(1000));
  EXPECT_LT(received - sending, milliseconds(500));
  RecordProperty(
      "notify_latency_us",
      std::to_string(
          std::chrono::duration_cast<std::chrono::microseconds>(received - sending).count()));

  // Nothing to receive: empty after about the timeout.
  started = Clock::now();
  EXPECT_TRUE(listener->wait_for_notifications(milliseconds(200)).empty());
  auto waited = Clock::now() - started;
  EXPECT_GE(waited, milliseconds(150));
  EXPECT_LT(waited, milliseconds(1000));

  // Received while the listener ran a statement of its own (its own NOTIFY arrives before the
  // statement's end): returned at once, even with no time to wait.
  notify(*listener, "own");
  got = listener->wait_for_notifications(milliseconds(0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "own");

  // Sent by another session while the listener is busy: delivered by the next wait.
  const std::int64_t listener_pid = backend().session_id(*listener);
  std::jthread busy_sender([&] {
    auto watcher = backend().connect();
    for (int i = 0; i < 500; ++i) {
      auto r = watcher->execute(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'",
          {Value(listener_pid)});
      if (r.int64_at(0, "n") > 0) break;
      std::this_thread::sleep_for(milliseconds(2));
    }
    notify(*sender, "while busy");
  });
  listener->execute("SELECT pg_sleep(0.3)");
  busy_sender.join();
  started = Clock::now();
  got = listener->wait_for_notifications(milliseconds(5000));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "while busy");
  EXPECT_LT(Clock::now() - started, milliseconds(1000));

  // Several notifications of one transaction, in order.
  sender->begin();
  notify(*sender, "a");
  notify(*sender, "b");
  sender->commit();
  std::vector<Notification> all;
  for (auto deadline = Clock::now() + milliseconds(5000);
       all.size() < 2 && Clock::now() < deadline;) {
    for (auto& n : listener->wait_for_notifications(milliseconds(500))) all.push_back(n);
  }
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].payload, "a");
  EXPECT_EQ(all[1].payload, "b");

  // A listener whose session is killed reports the loss.
  backend().kill_session(*sender, listener_pid);
  started = Clock::now();
  try {
    listener->wait_for_notifications(milliseconds(5000));
    FAIL() << "no error from a killed session";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
  EXPECT_LT(Clock::now() - started, milliseconds(1000));
  EXPECT_TRUE(listener->broken());
  try {
    listener->wait_for_notifications(milliseconds(10));
    FAIL() << "no error from a broken connection";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, DriverTest, ::testing::ValuesIn(all_backends()), BackendName());

// A URL that names no driver opens the dialect's default: libpq for postgresql://, libmysqlclient
// for mysql:// (each listed first by available_drivers()).
TEST(DefaultDriver, AUrlWithoutADriverOpensTheDialectsFirst) {
  for (const Backend& b : all_backends()) {
    DatabaseUrl url = b.url();
    url.driver.clear();
    const std::string first = available_drivers(b.dialect).front();
#if defined(DBLOCK_HAVE_LIBPQ) && defined(DBLOCK_HAVE_MYSQL)
    EXPECT_EQ(first, b.dialect == Dialect::kPostgreSQL ? "libpq" : "libmysqlclient");
#endif
    const std::string described = open_connection(url)->describe();
    EXPECT_TRUE(described.ends_with("(" + first + ")")) << described;
  }
}

// The PostgreSQL pairs only, for what only PostgreSQL has.
class PostgresDriverTest : public DriverTest {};

// PostgreSQL only (the MySQL drivers run one statement per call): without parameters a statement
// may be a script of several; its effects all happen, and the last statement's rows come back.
TEST_P(PostgresDriverTest, AScriptOfSeveralStatementsRunsWhole) {
  const Result r =
      conn_->execute("INSERT INTO " + t() + " (k, n) VALUES ('a', 1); INSERT INTO " + t() +
                     " (k, n) VALUES ('b', 2); SELECT count(*) AS c FROM " + t());
  EXPECT_EQ(r.int64_at(0, "c"), 2);
}

// The libpq driver prepares a statement with parameters once per session and runs it again from
// there (libpqxx and SOCI send each one whole); a statement the session lost (a service's
// DEALLOCATE ALL) or whose table changed under its plan is prepared again, and behind a
// transaction pooler nothing is prepared.
TEST_P(PostgresDriverTest, TheLibpqDriverPreparesAStatementOncePerSession) {
  const auto prepared = [](Connection& c) {
    return c.execute("SELECT count(*) AS n FROM pg_prepared_statements").int64_at(0, "n");
  };
  const std::int64_t once = backend().driver == "libpq" ? 1 : 0;
  const std::int64_t before = prepared(*conn_);  // the session's set-up statements
  conn_->execute(insert_sql(), {Value("a"), Value(1), Value("x"), Value(0.5)});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(conn_->execute(select_sql(), {Value("a")}).int64_at(0, "n"), 1);
  }
  EXPECT_EQ(prepared(*conn_) - before, 2 * once);  // the insert and the select
  // The service drops every prepared statement of the session: the next run prepares again.
  conn_->execute("DEALLOCATE ALL");
  EXPECT_EQ(conn_->execute(select_sql(), {Value("a")}).int64_at(0, "n"), 1);
  EXPECT_EQ(prepared(*conn_), once);
  // A column added under a cached plan of SELECT *: prepared again, it returns the new column.
  const std::string star = "SELECT * FROM " + t() + " WHERE k = " + p(1);
  EXPECT_EQ(conn_->execute(star, {Value("a")}).columns().size(), 4u);
  conn_->execute("ALTER TABLE " + t() + " ADD COLUMN e integer");
  EXPECT_EQ(conn_->execute(star, {Value("a")}).columns().size(), 5u);
  // Behind a transaction pooler: nothing is prepared.
  DatabaseUrl pooled = backend().url();
  pooled.transaction_pooler = true;
  std::unique_ptr<Connection> through_pooler = open_connection(pooled);
  EXPECT_EQ(through_pooler->execute(select_sql(), {Value("a")}).int64_at(0, "n"), 1);
  EXPECT_EQ(prepared(*through_pooler), 0);
}

INSTANTIATE_TEST_SUITE_P(Pairs, PostgresDriverTest, ::testing::ValuesIn(postgresql_backends()),
                         BackendName());

// COPY is not something dblock sends; one sent through a Connection fails with
// kInvalidArgument, and the connection stays usable instead of being left in the middle of a
// COPY (the libpq driver ends it at once; under libpqxx and SOCI, libpq ends it at the next
// statement). Before, libpqxx's own range_error escaped while the result was read (outside the
// driver contract, and the pool dropped the connection), and SOCI gave kOther with no message.
TEST_P(PostgresDriverTest, ACopyFailsAndTheConnectionGoesOn) {
  const std::vector<std::string> copies = {"COPY (SELECT 1) TO STDOUT",
                                           "COPY " + t() + " FROM STDIN"};
  for (const std::string& copy : copies) {
    try {
      conn_->execute(copy);
      ADD_FAILURE() << "no error for " << copy;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << copy << ": " << e.what();
    }
  }
  EXPECT_FALSE(conn_->broken());
  EXPECT_EQ(conn_->execute("SELECT 2 AS v").int64_at(0, "v"), 2);
  EXPECT_TRUE(conn_->execute("SELECT k FROM " + t()).empty());
}

}  // namespace
}  // namespace dblock::testing
