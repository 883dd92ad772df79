// SPDX-License-Identifier: Apache-2.0
// postgresql:// URLs in the forms libpq accepts, on every PostgreSQL driver pair: several hosts
// of which the first is down (a failover set-up's URL), and the server's Unix socket directory
// as the host, percent-encoded or as a parameter. scripts/dev-db.sh starts the server with a
// socket directory and exports it as DBLOCK_TEST_PG_SOCKET_DIR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends.hpp"
#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "url_encoding.hpp"

namespace dblock::testing {
namespace {

class UrlConnectTest : public ::testing::TestWithParam<Backend> {
 protected:
  const Backend& backend() const { return GetParam(); }

  // The pair's URL with `servers` as its authority's host list and `query` after the driver;
  // the password is kept out of the text, as DBLOCK_PASSWORD keeps it.
  DatabaseUrl url_with(const std::string& servers, const std::string& query = "") const {
    const DatabaseUrl base = backend().url();
    DatabaseUrl url = DatabaseUrl::parse("postgresql://" + detail::percent_encode(base.user) + "@" +
                                         servers + "/" + detail::percent_encode(base.database) +
                                         "?driver=" + backend().driver + query);
    url.password = base.password;
    return url;
  }
  std::string server() const {
    const DatabaseUrl base = backend().url();
    return detail::url_host(base.host.empty() ? "127.0.0.1" : base.host, base.effective_port());
  }
  // The directory holding the test server's Unix socket.
  static std::string socket_dir() {
    const char* dir = std::getenv("DBLOCK_TEST_PG_SOCKET_DIR");
    if (dir == nullptr || *dir == '\0') {
      throw std::runtime_error(
          "DBLOCK_TEST_PG_SOCKET_DIR is not set: run the tests with scripts/test.sh, or export "
          "the directory of the server's Unix socket (see scripts/dev-db.sh env)");
    }
    return dir;
  }
  // The port and whether the session runs over a Unix socket, as the server sees it.
  static std::pair<int, bool> session_of(Connection& conn) {
    const Result r = conn.execute(
        "SELECT current_setting('port')::int AS port, inet_server_addr() IS NULL AS unix");
    return {static_cast<int>(r.int64_at(0, "port")), r.at(0, "unix").value_or("") == "t"};
  }
};

TEST_P(UrlConnectTest, SeveralHostsWhoseFirstIsDownReachTheSecond) {
  const DatabaseUrl url = url_with("127.0.0.1:1," + server(), "&target_session_attrs=read-write");
  ASSERT_EQ(url.more_hosts.size(), 1u);
  auto conn = open_connection(url);
  EXPECT_EQ(session_of(*conn).first, backend().url().effective_port());
  EXPECT_EQ(conn->describe().find(url.password), std::string::npos) << conn->describe();
  // A pool opens every connection the same way.
  auto pool = open_pool(url, {.max_size = 2});
  auto a = pool->acquire();
  auto b = pool->acquire();
  EXPECT_EQ(session_of(*b).first, backend().url().effective_port());
}

TEST_P(UrlConnectTest, EveryHostDownIsReportedWithoutThePassword) {
  try {
    open_connection(url_with("127.0.0.1:1,127.0.0.1:2"));
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectFailed) << e.what();
    const std::string what = e.what();
    // libpq's account of each attempt.
    EXPECT_NE(what.find("port 1 failed"), std::string::npos) << what;
    EXPECT_NE(what.find("port 2 failed"), std::string::npos) << what;
    EXPECT_EQ(what.find(backend().url().password), std::string::npos) << what;
  }
}

TEST_P(UrlConnectTest, ASocketDirectoryAsTheHostConnectsOverTheSocket) {
  const std::string port = std::to_string(backend().url().effective_port());
  const DatabaseUrl encoded = url_with(detail::percent_encode(socket_dir()) + ":" + port);
  EXPECT_EQ(encoded.host, socket_dir());
  auto conn = open_connection(encoded);
  EXPECT_EQ(session_of(*conn), std::make_pair(std::stoi(port), true));

  // libpq's parameter form, as `postgresql:///db?host=/var/run/postgresql` gives it.
  const DatabaseUrl param =
      url_with("", "&host=" + detail::percent_encode(socket_dir()) + "&port=" + port);
  EXPECT_EQ(param.host, "");
  auto by_param = open_connection(param);
  EXPECT_EQ(session_of(*by_param), std::make_pair(std::stoi(port), true));

  // A socket directory and a TCP host in one list; the first is tried first.
  auto listed =
      open_connection(url_with(detail::percent_encode(socket_dir()) + ":" + port + "," + server()));
  EXPECT_TRUE(session_of(*listed).second);
}

TEST_P(UrlConnectTest, PortsThatDoNotPairWithTheHostsAreRefusedBeforeConnecting) {
  try {
    open_connection(url_with(server() + ",127.0.0.1", "&port=1,2,3"));
    FAIL() << "connected with 3 ports for 2 hosts";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 port"), std::string::npos) << e.what();
  }
}

TEST_P(UrlConnectTest, AParameterLibpqDoesNotKnowIsRefusedByName) {
  try {
    open_connection(url_with(server(), "&colour=blue"));
    FAIL() << "connected with an unknown parameter";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"colour\""), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(backend().url().password), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, UrlConnectTest, ::testing::ValuesIn(postgresql_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
