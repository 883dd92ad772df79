// SPDX-License-Identifier: Apache-2.0
// What every connection dblock opens is given: its connection-string options quoted as libpq
// and SOCI's MySQL backend read them, its socket marked close-on-exec, and the network bounds of
// both sides (TCP keepalive and TCP_USER_TIMEOUT on this side; on PostgreSQL, the server's
// keepalive settings for the session). Internal; not installed. The bounds are explained in
// docs/connections.md ("Network timeouts").
//
//   detail::set_close_on_exec(fd);
//   detail::bound_network_waits(fd);
//   detail::bound_server_waits(conn, url);  // PostgreSQL
//
// Thread-safety: functions without state; bound_server_waits() uses the connection it is given
// (one thread at a time).
#pragma once

#include <string>
#include <string_view>

#include "dblock/connection.hpp"
#include "dblock/url.hpp"

// Called across dblock's own libraries (the drivers): exported from a shared build like the
// public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// Appends key='value' and a space: single quotes, with ' and \ escaped by a backslash. The syntax
// of libpq connection strings and of SOCI's MySQL backend.
void append_quoted_option(std::string& out, std::string_view key, std::string_view value);

// Marks a connection's socket close-on-exec, so programs the service starts (`dblock run`'s
// command, for one) do not inherit the database session. No-op for fd < 0.
void set_close_on_exec(int fd) noexcept;

// Bounds how long a statement on a connection dblock opened can hang on a network that stopped
// delivering (a cut cable, a dropped route), instead of the kernel's default of many minutes:
// TCP keepalive probes after kKeepaliveIdle of silence (every kKeepaliveInterval, given up after
// kKeepaliveProbes), and TCP_USER_TIMEOUT (Linux only), which fails the socket when data it sent
// stays unacknowledged for kUnackedTimeout. A long lock wait on a live server is unaffected (the
// server acknowledges the statement and answers the probes). No-op for -1 and non-TCP sockets.
inline constexpr int kKeepaliveIdleSeconds = 10;
inline constexpr int kKeepaliveIntervalSeconds = 5;
inline constexpr int kKeepaliveProbes = 3;
inline constexpr int kUnackedTimeoutMs = 20000;
void bound_network_waits(int fd) noexcept;

// The other side of the same bound, on PostgreSQL. The server ends the session of a client that
// stopped answering, and with it the session's advisory locks and its transaction's row locks,
// only when its own TCP keepalive gives up (on an idle connection) or data it sent stays
// unacknowledged too long: by default after the server host's settings, two hours and about
// fifteen minutes on Linux, during which a vanished holder's lock stays taken. Sessions dblock
// opens over TCP ask the server to give up after 90 s instead, either way: longer than this
// side's bound (25 s), so that a holder cut off from the server finds its connection dead, and
// reports its lease lost, before the server frees the lock for someone else.
inline constexpr int kServerKeepaliveIdleSeconds = 60;
inline constexpr int kServerKeepaliveIntervalSeconds = 10;
inline constexpr int kServerKeepaliveProbes = 3;
inline constexpr int kServerUnackedTimeoutMs = 90000;
static_assert(kServerKeepaliveIdleSeconds +
                      kServerKeepaliveIntervalSeconds * kServerKeepaliveProbes >=
                  2 * (kKeepaliveIdleSeconds + kKeepaliveIntervalSeconds * kKeepaliveProbes),
              "the server must give a silent client up well after the client gives the server up");
static_assert(kServerUnackedTimeoutMs >=
                  2000 * (kKeepaliveIdleSeconds + kKeepaliveIntervalSeconds * kKeepaliveProbes),
              "the server must give a silent client up well after the client gives the server up");
// Sends the server's bound on `conn`, a PostgreSQL connection just opened from `url`. Not when
// the URL sets libpq's keepalive or TCP timeout parameters (this side's bound is then the user's,
// and the server's own default stays the longer one) or says pool_mode=transaction (the setting
// would stay on a server session the pooler lends to other clients). A server that refuses the
// settings (a platform without one of them) keeps its defaults.
void bound_server_waits(Connection& conn, const DatabaseUrl& url);

}  // namespace dblock::detail

#pragma GCC visibility pop
