// The driver contract, run against every database x driver pair.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

TEST_P(DriverTest, WrongPasswordIsAccessDeniedAndNeverShown) {
  auto url = backend().url();
  url.password = "Wr0ng-Secret-" + unique_name("pw");
  try {
    open_connection(url);
    FAIL() << "connected with a wrong password";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kAccessDenied) << what;
    EXPECT_EQ(what.find(url.password), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("password"), std::string::npos) << what;  // says what to check
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

TEST_P(DriverTest, UnknownDatabaseIsConnectFailed) {
  auto url = backend().url();
  url.database = unique_name("nodb");
  try {
    open_connection(url);
    FAIL() << "connected to a database that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectFailed) << e.what();
    EXPECT_NE(std::string(e.what()).find(url.database), std::string::npos) << e.what();
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

INSTANTIATE_TEST_SUITE_P(Pairs, DriverTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
