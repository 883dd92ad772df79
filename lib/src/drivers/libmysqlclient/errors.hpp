// SPDX-License-Identifier: Apache-2.0
// Turns libmysqlclient failures (error numbers, SQLSTATEs, messages) into dblock::Error: the one
// place the MySQL/MariaDB driver classifies native errors. Internal to the dblock_mysql target.
//
// Thread-safety: the functions read the handle they are given and nothing else; call them from
// the thread that uses that handle.
#pragma once

#include <mysql.h>

#include <string_view>

#include "dblock/error.hpp"

namespace dblock::mysql_driver {

// The error last reported on a connection handle (mysql_errno / mysql_sqlstate / mysql_error).
// `where` names the server ("MariaDB 127.0.0.1:3306/app"); `secret` is scrubbed from the text.
Error connection_error(MYSQL* conn, std::string_view where, std::string_view secret);

// The error last reported on a prepared statement handle (mysql_stmt_errno and friends).
Error statement_error(MYSQL_STMT* stmt, std::string_view where, std::string_view secret);

// The error of a failed mysql_real_connect(): bad credentials -> kAccessDenied; refused,
// unreachable, unknown host, unknown database (the message says it does not exist), a handshake
// cut short -> kConnectFailed.
Error connect_error(MYSQL* conn, std::string_view where, std::string_view secret,
                    std::string_view database);

// The last error number on a statement handle, for the checks below.
unsigned int statement_errno(MYSQL_STMT* stmt) noexcept;

// True when a cached prepared statement is no longer usable and must be closed and prepared
// again: the server forgot it or asks for a re-prepare (the statement did not run), or its result
// set has a different number of columns since it was prepared, e.g. after ALTER TABLE (the
// statement ran, and closing it discards that result; running a query again is harmless).
bool is_stale_statement(unsigned int err) noexcept;

// True when the server cannot prepare this kind of statement (ER_UNSUPPORTED_PS); the driver then
// sends it as text.
bool is_unsupported_prepare(unsigned int err) noexcept;

// A URL or handle the driver cannot use (unknown URL parameter, bad value, missing
// CLIENT_FOUND_ROWS).
Error invalid_argument_error(std::string_view where, std::string_view message);

// A connection the driver refuses after opening it (e.g. no TLS although ssl_mode requires it).
Error connect_failed_error(std::string_view where, std::string_view message);

// A client library failure outside any statement (mysql_library_init, out of memory).
Error client_error(std::string_view where, std::string_view message);

}  // namespace dblock::mysql_driver
