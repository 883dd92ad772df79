// SPDX-License-Identifier: Apache-2.0
// The socket probes (socket_probes.hpp): poll() for a close or a message, and a peek at the
// head of the socket for PostgreSQL's FATAL error.
//
// Thread-safety: functions without state.
#include "socket_probes.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <string_view>

namespace dblock::detail {

bool peer_closed(int fd) noexcept {
  if (fd < 0) return false;
  pollfd pfd{fd, POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool peer_spoke_or_closed(int fd) noexcept {
  if (fd < 0) return false;
  pollfd pfd{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) <= 0) return false;
  return (pfd.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool peer_ended_session(int fd, Dialect dialect) noexcept {
  if (peer_closed(fd)) return true;
  if (dialect != Dialect::kPostgreSQL || fd < 0) return false;
  // An ErrorResponse: 'E', a 4-byte length, then fields, each a type byte and a NUL-terminated
  // string; the first are the severity ('S', translated) and, from PostgreSQL 9.6, the same
  // untranslated ('V').
  char head[64];
  const ssize_t n = ::recv(fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n < 6 || head[0] != 'E') return false;
  const std::string_view fields(head + 5, static_cast<std::size_t>(n) - 5);
  for (std::string_view severity :
       {std::string_view("SFATAL\0", 7), std::string_view("VFATAL\0", 7),
        std::string_view("SPANIC\0", 7), std::string_view("VPANIC\0", 7)}) {
    if (fields.find(severity) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace dblock::detail
