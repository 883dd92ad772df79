// SPDX-License-Identifier: Apache-2.0
// One execution of a server-side prepared statement: binds dblock::Values natively (int64 as
// LONGLONG, double as DOUBLE, text as STRING, NULL as NULL), executes, and fetches every result
// column as text (the client library converts numbers and dates), refetching a column whose value
// did not fit its buffer. Internal to the dblock_mysql target.
//
// Thread-safety: uses the statement's connection; one thread at a time.
#pragma once

#include <mysql.h>

#include <optional>
#include <span>

#include "dblock/connection.hpp"

namespace dblock::mysql_driver {

// Runs `stmt` (prepared, with as many placeholders as `params`) and returns its rows, column
// names, affected rows (for a statement with a result set, the row count) and, for a statement
// without a result set, mysql_stmt_insert_id(). Returns nullopt on
// failure, with the error left on the statement handle (mysql_stmt_errno) for the caller to
// classify. The statement is left ready to be executed again.
std::optional<Result> run_statement(MYSQL_STMT* stmt, std::span<const Value> params);

}  // namespace dblock::mysql_driver
