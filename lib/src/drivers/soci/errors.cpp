// SPDX-License-Identifier: Apache-2.0
// Classification of SOCI failures for the SOCI driver (see errors.hpp).
//
// SOCI raises postgresql_soci_error (with the SQLSTATE) and mysql_soci_error (with the MySQL
// error number) for server and client-library errors, and a plain soci_error for everything it
// detects itself. Two cases need care:
//  - SOCI 4.0's PostgreSQL backend reports a failed connect as a plain soci_error carrying
//    libpq's message, so connect failures are classified by that message, as libpqxx's are.
//  - A PostgreSQL session whose server process was terminated (pg_terminate_backend, server
//    restart) fails its next statement with SQLSTATE 57P01 when the server's goodbye message
//    was read, or, as observed with SOCI 4.0.3 and PostgreSQL 15, with libpq's "server closed
//    the connection unexpectedly", which SOCI tags with its fallback SQLSTATE 08000. Either maps
//    to kConnectionLost, and the caller also passes still_open = false once libpq marks the
//    connection bad.
//
// Messages are SOCI's own text without the context SOCI appends (the SQL and the bound values),
// so parameter values never reach a dblock::Error.
//
// Thread-safety: pure functions.
#include "drivers/soci/errors.hpp"

#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <string>

#include "drivers/error_mapping.hpp"

namespace dblock::soci_driver {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The native message: SOCI's text without its context and its lead-ins ("Cannot execute query.
// Fatal error."); for PostgreSQL without the "ERROR:" tag and the "LINE n: <sql>" echo with its
// caret line (DETAIL and HINT stay).
std::string message_of(const std::exception& e) {
  const auto* soci_error = dynamic_cast<const soci::soci_error*>(&e);
  std::string full = soci_error != nullptr ? soci_error->get_error_message() : e.what();
  std::string_view text = full;
  for (std::string_view tag : {"ERROR:", "FATAL:"}) {
    if (std::size_t at = text.find(tag); at != std::string_view::npos) {
      text.remove_prefix(at + tag.size());
      break;
    }
  }
  // SOCI's own lead-ins say nothing the rest does not.
  for (std::string_view noise : {"Cannot establish connection to the database.",
                                 "Cannot execute query.", "Fatal error.", "Connection failed."}) {
    while (text.starts_with(' ') || text.starts_with('\n')) text.remove_prefix(1);
    if (text.starts_with(noise)) text.remove_prefix(noise.size());
  }
  return detail::libpq_message_text(text);
}

// The SQLSTATE of a PostgreSQL error, or empty (SOCI pads a missing one with spaces).
std::string sqlstate_of(const std::exception& e) {
  const auto* pg = dynamic_cast<const soci::postgresql_soci_error*>(&e);
  if (pg == nullptr) return {};
  std::string state = pg->sqlstate();
  if (state.size() != 5 || state.find_first_of(" \t") != std::string::npos) return {};
  return state;
}

}  // namespace

Error statement_error(const std::exception& e, Dialect dialect, bool still_open,
                      std::string_view where, std::string_view secret) {
  std::string message = message_of(e);
  std::string sqlstate = sqlstate_of(e);
  int server_errno = 0;
  ErrorCode code = ErrorCode::kOther;
  if (!sqlstate.empty()) {
    code = detail::code_from_sqlstate(sqlstate);
  } else if (const auto* my = dynamic_cast<const soci::mysql_soci_error*>(&e)) {
    server_errno = static_cast<int>(my->err_num_);
    code = detail::code_from_mysql_errno(my->err_num_);
  }
  // SOCI's own category covers the client-side "connection gone" errors of both backends.
  if (const auto* se = dynamic_cast<const soci::soci_error*>(&e);
      se != nullptr && se->get_error_category() == soci::soci_error::connection_error) {
    code = ErrorCode::kConnectionLost;
  }
  // A connect-time code during a statement means the server went away (e.g. 2002 after an
  // automatic reconnect attempt).
  if (code == ErrorCode::kConnectFailed && dialect == Dialect::kMySQL && server_errno != 1049) {
    code = ErrorCode::kConnectionLost;
  }
  if (!still_open) code = ErrorCode::kConnectionLost;
  return detail::driver_error(code, where, message, secret, std::move(sqlstate), server_errno);
}

Error connect_error(const std::exception& e, Dialect dialect, std::string_view where,
                    std::string_view secret) {
  std::string message = message_of(e);
  std::string sqlstate = sqlstate_of(e);
  int server_errno = 0;
  ErrorCode code = ErrorCode::kConnectFailed;
  if (const auto* my = dynamic_cast<const soci::mysql_soci_error*>(&e)) {
    server_errno = static_cast<int>(my->err_num_);
    code = detail::code_from_mysql_errno(my->err_num_);
    if (my->err_num_ == 1049) message += " (the database does not exist)";
  } else if (!sqlstate.empty()) {
    code = detail::code_from_sqlstate(sqlstate);
  } else if (dialect == Dialect::kPostgreSQL) {
    code = detail::libpq_connect_code(message);
  } else if (contains(message, "Malformed connection string") ||
             contains(message, "option may only be set")) {
    code = ErrorCode::kInvalidArgument;
  }
  if (code != ErrorCode::kAccessDenied && code != ErrorCode::kInvalidArgument) {
    code = ErrorCode::kConnectFailed;
  }
  return detail::driver_error(code, where, message, secret, std::move(sqlstate), server_errno);
}

Error invalid_argument_error(std::string_view where, std::string_view message) {
  return detail::driver_error(ErrorCode::kInvalidArgument, where, message, {});
}

}  // namespace dblock::soci_driver
