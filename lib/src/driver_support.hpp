// SPDX-License-Identifier: Apache-2.0
// Shared pieces for driver implementations: SQLSTATE and MySQL errno classification, and the
// one way a driver builds the Error it throws. Internal; not installed.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/connection.hpp"
#include "dblock/error.hpp"
#include "dblock/url.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// Classifies a PostgreSQL SQLSTATE (e.g. "23505" -> kUniqueViolation).
ErrorCode code_from_sqlstate(std::string_view sqlstate) noexcept;

// Classifies a MySQL/MariaDB server or client error number (e.g. 1213 -> kDeadlock).
ErrorCode code_from_mysql_errno(unsigned int err) noexcept;

// The Error a driver throws: "<where>: <message> (SQLSTATE s | error n); <advice>".
// `where` says which server ("PostgreSQL 127.0.0.1:5432/app"); `message` is the native text,
// trimmed to one line, with `secret` (the password) scrubbed out. Advice depends on the code
// (e.g. kUndefinedTable: "run `dblock migrate up`").
Error driver_error(ErrorCode code, std::string_view where, std::string_view message,
                   std::string_view secret, std::string sqlstate = {}, int server_errno = 0);

// How a driver names the server it talks to: "PostgreSQL host:port/database" or "MySQL
// host:port/database", IPv6 hosts in brackets, "(default socket)" when there is no host.
std::string server_location(Dialect dialect, std::string_view host, std::string_view port,
                            std::string_view database);

// Classifies libpq's message for a connection it could not open (libpq gives no SQLSTATE then):
// bad credentials -> kAccessDenied, a bad connection option -> kInvalidArgument, anything else
// (refused, unreachable, unknown host, unknown database, timeout) -> kConnectFailed.
ErrorCode libpq_connect_code(std::string_view message) noexcept;

// libpq's multi-line message as one line: the "LINE n: <sql>" echo, its caret line and blank
// lines dropped, an "ERROR:" tag at the start of a line removed; DETAIL and HINT stay.
std::string libpq_message_text(std::string_view text);

// Appends key='value' and a space: single quotes, with ' and \ escaped by a backslash. The syntax
// of libpq connection strings and of SOCI's MySQL backend.
void append_quoted_option(std::string& out, std::string_view key, std::string_view value);

// True for a connection-string keyword: one or more of a-z, 0-9 and '_'.
bool is_option_keyword(std::string_view key) noexcept;

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

// PostgreSQL: true for the WARNING a backend sends when its wait for a synchronous standby was
// cancelled (a cancel request, statement_timeout): the commit took effect locally and the
// statement reports success, but the standby may not have it, so a failover can lose it. The
// server's English text (lc_messages = C, as the servers dblock's tests start); another
// language's wording is not recognised.
bool is_sync_replication_cancelled(std::string_view notice) noexcept;
// The Error for such a commit: kCommitInDoubt, saying what to do.
Error sync_replication_cancelled_error(std::string_view where);

// PostgreSQL: the Error for a COPY sent through a Connection, which dblock does not support:
// kInvalidArgument. The driver has ended the COPY by then, so the connection goes on.
Error copy_refused_error(std::string_view where);

// Rewrites $1.. (PostgreSQL) or ? (MySQL) placeholders to :p1.. for drivers with named
// placeholders, leaving quoted strings, quoted identifiers and comments untouched. When
// `placeholders` is given, it receives how many parameters the statement takes: the number of ?
// (MySQL) or the highest $n (PostgreSQL).
std::string to_named_placeholders(std::string_view sql, Dialect dialect,
                                  std::size_t* placeholders = nullptr);

}  // namespace dblock::detail

#pragma GCC visibility pop
