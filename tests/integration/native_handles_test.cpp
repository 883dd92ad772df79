// SPDX-License-Identifier: Apache-2.0
// Each driver adapts a connection the service already owns: pqxx::connection, MYSQL*,
// soci::session and soci::connection_pool.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#ifdef DBLOCK_HAVE_LIBPQXX
#include <pqxx/pqxx>

#include "dblock/libpqxx.hpp"
#endif
#ifdef DBLOCK_HAVE_MYSQL
#include "dblock/libmysqlclient.hpp"
#endif
#ifdef DBLOCK_HAVE_SOCI
#include "dblock/soci.hpp"
#endif

namespace dblock::testing {
namespace {

const char* env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string(name) + " is not set; run scripts/test.sh");
  }
  return v;
}

// A libpq keyword/value string for a parsed URL (SOCI's PostgreSQL backend takes this form).
std::string pg_conninfo(const DatabaseUrl& u) {
  return "host=" + u.host + " port=" + std::to_string(u.effective_port()) +
         " dbname=" + u.database + " user=" + u.user + " password=" + u.password;
}

#ifdef DBLOCK_HAVE_LIBPQXX
TEST(NativeHandles, WrapsAServicesPqxxConnection) {
  pqxx::connection native(env_or_fail("DBLOCK_TEST_PG_URL"));
  auto conn = wrap_pqxx(native);
  EXPECT_EQ(conn->dialect(), Dialect::kPostgreSQL);
  EXPECT_EQ(conn->execute("SELECT $1::int + 1 AS n", {Value(41)}).int64_at(0, "n"), 42);
  // The service keeps using its connection between dblock's calls.
  {
    pqxx::work w(native);
    EXPECT_EQ(w.exec("SELECT 7").at(0).at(0).as<int>(), 7);
    w.commit();
  }
  EXPECT_EQ(conn->execute("SELECT 1 AS n").int64_at(0, "n"), 1);
  Migrator m(*conn, TableNames(unique_name("w") + "_"));
  EXPECT_FALSE(m.status().empty());
}

// dblock subscribes to its channels through libpqxx (a notification_receiver before 7.10, a
// handler given to connection::listen() from 7.10). Once dblock's object is gone, the service's
// connection no longer listens on them, and a notification sent afterwards reaches no
// subscriber that went with it.
TEST(NativeHandles, AWrappedPqxxConnectionStopsListeningWhenDblockLetsGo) {
  const std::string url = env_or_fail("DBLOCK_TEST_PG_URL");
  pqxx::connection native(url);
  auto sender = connect_pqxx(DatabaseUrl::parse(url));
  const std::string channel = unique_name("wrapped");
  {
    auto conn = wrap_pqxx(native);
    conn->listen(channel);
    sender->execute("SELECT pg_notify($1, 'heard')", {Value(channel)});
    std::vector<Notification> got;
    for (int i = 0; i < 10 && got.empty(); ++i) {
      got = conn->wait_for_notifications(std::chrono::milliseconds(500));
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].channel, channel);
    EXPECT_EQ(got[0].payload, "heard");
  }
  {
    pqxx::nontransaction tx(native);
    EXPECT_EQ(tx.exec("SELECT count(*) FROM pg_listening_channels() AS c(name) WHERE name = " +
                      tx.quote(channel))
                  .at(0)
                  .at(0)
                  .as<int>(),
              0);
  }
  sender->execute("SELECT pg_notify($1, 'after')", {Value(channel)});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(native.get_notifs(), 0);
  pqxx::work w(native);
  EXPECT_EQ(w.exec("SELECT 1").at(0).at(0).as<int>(), 1);
  w.commit();
}
#endif

#ifdef DBLOCK_HAVE_MYSQL
MYSQL* native_mysql(unsigned long flags) {
  auto u = DatabaseUrl::parse(env_or_fail("DBLOCK_TEST_MYSQL_URL"));
  MYSQL* m = mysql_init(nullptr);
  if (mysql_real_connect(m, u.host.c_str(), u.user.c_str(), u.password.c_str(), u.database.c_str(),
                         static_cast<unsigned>(u.effective_port()), nullptr, flags) == nullptr) {
    std::string err = mysql_error(m);
    mysql_close(m);
    throw std::runtime_error("mysql_real_connect: " + err);
  }
  return m;
}

TEST(NativeHandles, WrapsAServicesMysqlHandle) {
  MYSQL* native = native_mysql(CLIENT_FOUND_ROWS);
  {
    auto conn = wrap_mysql(native);
    EXPECT_EQ(conn->dialect(), Dialect::kMySQL);
    const bool mariadb =
        std::string(mysql_get_server_info(native)).find("MariaDB") != std::string::npos;
    EXPECT_EQ(conn->server(), mariadb ? Server::kMariaDB : Server::kMySQL);
    EXPECT_EQ(conn->execute("SELECT ? + 1 AS n", {Value(41)}).int64_at(0, "n"), 42);
  }
  // dblock does not close a handle it did not open.
  EXPECT_EQ(mysql_query(native, "SELECT 1"), 0);
  mysql_free_result(mysql_store_result(native));
  mysql_close(native);
}

TEST(NativeHandles, RefusesAMysqlHandleWithoutFoundRows) {
  MYSQL* native = native_mysql(0);
  try {
    wrap_mysql(native);
    FAIL() << "accepted a handle without CLIENT_FOUND_ROWS";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CLIENT_FOUND_ROWS"), std::string::npos) << e.what();
  }
  mysql_close(native);
}
#endif

#ifdef DBLOCK_HAVE_SOCI
TEST(NativeHandles, WrapsAServicesSociSession) {
  auto u = DatabaseUrl::parse(env_or_fail("DBLOCK_TEST_PG_URL"));
  soci::session native("postgresql", pg_conninfo(u));
  auto conn = wrap_soci(native);
  EXPECT_EQ(conn->dialect(), Dialect::kPostgreSQL);
  EXPECT_EQ(conn->execute("SELECT $1::int * 2 AS n", {Value(21)}).int64_at(0, "n"), 42);
}

TEST(NativeHandles, DrawsFromAServicesSociPool) {
  auto u = DatabaseUrl::parse(env_or_fail("DBLOCK_TEST_MYSQL_URL"));
  constexpr std::size_t kSize = 2;
  soci::connection_pool pool(kSize);
  for (std::size_t i = 0; i < kSize; ++i) {
    pool.at(i).open("mysql", "host=" + u.host + " port=" + std::to_string(u.effective_port()) +
                                 " db=" + u.database + " user=" + u.user +
                                 " password=" + u.password);
  }
  auto source = soci_pool_source(pool, kSize);
  EXPECT_EQ(source->dialect(), Dialect::kMySQL);
  std::vector<std::thread> threads;
  std::atomic<int> sum{0};
  std::atomic<bool> wrong_server{false};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto c = source->acquire();
        const auto version = c->execute("SELECT VERSION() AS v").at(0, "v").value_or("");
        if (c->server() !=
            (version.find("MariaDB") != std::string::npos ? Server::kMariaDB : Server::kMySQL)) {
          wrong_server = true;
        }
        sum += static_cast<int>(c->execute("SELECT ? AS n", {Value(1)}).int64_at(0, "n"));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sum.load(), 40);
  EXPECT_FALSE(wrong_server.load()) << "a pooled SOCI session misreported its server";
}
#endif

}  // namespace
}  // namespace dblock::testing
