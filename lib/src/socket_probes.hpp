// SPDX-License-Identifier: Apache-2.0
// Whether the server ended a session, seen on the connection's socket without reading from it:
// for connections no statement is using (a session lock's hold, a transactional lease's), so a
// lease whose session the server ended reports lost before the server can give its lock to
// another owner. Internal; not installed.
//
//   if (detail::peer_ended_session(conn.native_socket(), conn.dialect())) mark_lost();
//
// Thread-safety: functions without state; they leave the connection's protocol state untouched.
#pragma once

#include "dblock/dialect.hpp"

namespace dblock::detail {

// True when the server has closed the connection on `fd` (it sent FIN: a killed session, a
// server shut down), seen without reading from the socket. False for -1 and while nothing is
// known. For a connection no statement is using, so its protocol state is untouched.
bool peer_closed(int fd) noexcept;

// peer_closed(), or the server sent something on a connection no statement is using and nothing
// else can speak on (no LISTEN, no statement in flight): the message that ends the session. On
// PostgreSQL a terminated session's "terminating connection" error comes first, then the server
// frees the session's locks, and only then closes the socket, so reading the message as the end
// sees the session gone before another owner can have its lock.
bool peer_spoke_or_closed(int fd) noexcept;

// peer_closed(), or, on PostgreSQL, the server's FATAL error waits unread at the head of the
// socket: the message a terminated session gets before the server frees its locks and closes
// the socket (pg_terminate_backend, idle-session timeouts). For a connection no statement is
// using but that its user may LISTEN on: a notification or notice is not the end, a FATAL error
// is. Behind TLS the bytes cannot be read this way, and only the close counts.
bool peer_ended_session(int fd, Dialect dialect) noexcept;

}  // namespace dblock::detail
