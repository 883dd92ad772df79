// SPDX-License-Identifier: Apache-2.0
// Connections dblock opens bound how long a statement can hang on a network that stopped
// delivering: TCP keepalive and TCP_USER_TIMEOUT on their sockets (drivers/connect_options.hpp), so
// a renewal or release on a dead route fails within seconds, not the kernel's many minutes. On
// PostgreSQL they also bound how long the server keeps the session of a client that vanished
// (and its locks), to longer than the client's own bound.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "backends.hpp"
#include "dblock/open.hpp"
#include "drivers/connect_options.hpp"
#include "socket_probes.hpp"

namespace dblock::testing {
namespace {

class NetworkBoundsTest : public ::testing::TestWithParam<Backend> {};
// PostgreSQL only: MySQL has no session setting for the server's keepalive (docs/connections.md).
class ServerKeepaliveTest : public ::testing::TestWithParam<Backend> {};

int option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  if (::getsockopt(fd, level, name, &value, &len) != 0) return -1;
  return value;
}

TEST_P(NetworkBoundsTest, ConnectionsDblockOpensBoundTheirNetworkWaits) {
  auto conn = GetParam().connect();
  const int fd = conn->native_socket();
  ASSERT_GE(fd, 0) << "the driver offers no socket";
  EXPECT_EQ(option(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPIDLE), detail::kKeepaliveIdleSeconds);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPINTVL), detail::kKeepaliveIntervalSeconds);
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_KEEPCNT), detail::kKeepaliveProbes);
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), detail::kUnackedTimeoutMs);
#elif defined(TCP_USER_TIMEOUT)
  // The portable fallback (a Linux build with -DDBLOCK_PORTABLE_FALLBACKS) leaves it unset.
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
#endif
  EXPECT_FALSE(detail::peer_closed(fd));
  conn->execute("SELECT 1");  // the connection still works
}

std::string setting(Connection& conn, const std::string& name) {
  // In the setting's base unit (seconds, milliseconds), without one.
  return conn.execute("SELECT setting AS v FROM pg_settings WHERE name = $1", {Value(name)})
      .at(0, "v")
      .value_or("");
}

TEST_P(ServerKeepaliveTest, PostgreSQLGivesAVanishedClientUpAfterTheClientGivesItUp) {
  auto conn = GetParam().connect();
  EXPECT_EQ(setting(*conn, "tcp_keepalives_idle"),
            std::to_string(detail::kServerKeepaliveIdleSeconds));
  EXPECT_EQ(setting(*conn, "tcp_keepalives_interval"),
            std::to_string(detail::kServerKeepaliveIntervalSeconds));
  EXPECT_EQ(setting(*conn, "tcp_keepalives_count"), std::to_string(detail::kServerKeepaliveProbes));
  EXPECT_EQ(setting(*conn, "tcp_user_timeout"), std::to_string(detail::kServerUnackedTimeoutMs));
  // Past a transaction that ends in a rollback: set for the session.
  conn->execute("BEGIN");
  conn->execute("ROLLBACK");
  EXPECT_EQ(setting(*conn, "tcp_keepalives_idle"),
            std::to_string(detail::kServerKeepaliveIdleSeconds));

  // A URL with libpq's own keepalive parameters keeps the server's defaults too: the client's
  // bound is then the user's, and may be longer than 90 s.
  DatabaseUrl own = GetParam().url();
  own.params.emplace_back("keepalives", "1");
  auto kept = open_connection(own);
  EXPECT_NE(setting(*kept, "tcp_keepalives_idle"),
            std::to_string(detail::kServerKeepaliveIdleSeconds));
}

INSTANTIATE_TEST_SUITE_P(Pairs, NetworkBoundsTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

INSTANTIATE_TEST_SUITE_P(Pairs, ServerKeepaliveTest, ::testing::ValuesIn(postgresql_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
