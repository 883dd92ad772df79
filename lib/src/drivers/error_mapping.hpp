// SPDX-License-Identifier: Apache-2.0
// How a driver turns a server's failure into a dblock::Error, written once for every driver:
// SQLSTATEs and MySQL error numbers classified, libpq's messages for connections it could not
// open, the text and advice of the Error, and the errors of a cancelled synchronous-replication
// wait and of a COPY. Each driver maps its own library's exceptions with these in its
// errors.cpp. Internal; not installed.
//
//   throw detail::driver_error(detail::code_from_sqlstate(sqlstate), where, message, password,
//                              sqlstate);
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/dialect.hpp"
#include "dblock/error.hpp"

// Called across dblock's own libraries (the drivers): exported from a shared build like the
// public API, but internal (this header is not installed; see docs/install.md).
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

}  // namespace dblock::detail

#pragma GCC visibility pop
