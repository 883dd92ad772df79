// SPDX-License-Identifier: Apache-2.0
// The options of the connections dblock opens (drivers/connect_options.hpp): quoting, socket
// options and the server's keepalive settings.
//
// Thread-safety: functions without state.
#include "drivers/connect_options.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <string>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

void append_quoted_option(std::string& out, std::string_view key, std::string_view value) {
  out.append(key).append("='");
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out.append("' ");
}

void set_close_on_exec(int fd) noexcept {
  if (fd < 0) return;
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void bound_network_waits(int fd) noexcept {
  if (fd < 0) return;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return;
  auto set = [fd](int level, int name, int value) {
    ::setsockopt(fd, level, name, &value, sizeof value);
  };
  set(SOL_SOCKET, SO_KEEPALIVE, 1);
  // The probes' timing is set where the system has the options (Linux and the BSDs; macOS
  // names the idle time TCP_KEEPALIVE), else it stays the system's.
#if defined(TCP_KEEPIDLE)
  set(IPPROTO_TCP, TCP_KEEPIDLE, kKeepaliveIdleSeconds);
#elif defined(TCP_KEEPALIVE)
  set(IPPROTO_TCP, TCP_KEEPALIVE, kKeepaliveIdleSeconds);
#endif
#if defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
  set(IPPROTO_TCP, TCP_KEEPINTVL, kKeepaliveIntervalSeconds);
  set(IPPROTO_TCP, TCP_KEEPCNT, kKeepaliveProbes);
#endif
  // Linux only: elsewhere a statement whose data stays unacknowledged waits for the system's
  // retransmission timeout (docs/platforms.md).
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
  set(IPPROTO_TCP, TCP_USER_TIMEOUT, kUnackedTimeoutMs);
#endif
}

void bound_server_waits(Connection& conn, const DatabaseUrl& url) {
  if (url.transaction_pooler || url.param("keepalives") || url.param("tcp_user_timeout")) return;
  try {
    conn.execute(server_sql(Server::kPostgreSQL).session.server_keepalive,
                 {Value(std::to_string(kServerKeepaliveIdleSeconds)),
                  Value(std::to_string(kServerKeepaliveIntervalSeconds)),
                  Value(std::to_string(kServerKeepaliveProbes)),
                  Value(std::to_string(kServerUnackedTimeoutMs))});
  } catch (const Error& e) {
    // A server whose platform lacks one of these settings refuses it; the session then keeps
    // the server's defaults, as a connection handed in does. A lost connection is the caller's.
    if (e.code() == ErrorCode::kConnectionLost || e.code() == ErrorCode::kConnectFailed) throw;
  }
}

}  // namespace dblock::detail
