// Connections dblock opens bound how long a statement can hang on a network that stopped
// delivering: TCP keepalive and TCP_USER_TIMEOUT on their sockets (driver_support.hpp), so a
// renewal or release on a dead route fails within seconds, not the kernel's many minutes.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "backends.hpp"
#include "driver_support.hpp"

namespace dblock::testing {
namespace {

class NetworkBoundsTest : public ::testing::TestWithParam<Backend> {};

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
  EXPECT_EQ(option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), detail::kUnackedTimeoutMs);
  EXPECT_FALSE(detail::peer_closed(fd));
  conn->execute("SELECT 1");  // the connection still works
}

INSTANTIATE_TEST_SUITE_P(Pairs, NetworkBoundsTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
