// SPDX-License-Identifier: Apache-2.0
// Classification of libmysqlclient errors (MariaDB Connector/C and Oracle's libmysqlclient share
// the error numbers and SQLSTATEs used here).
#include "drivers/libmysqlclient/errors.hpp"

#include <string>

#include "drivers/error_mapping.hpp"

namespace dblock::mysql_driver {
namespace {

constexpr unsigned int kErUnknownStmtHandler = 1243;  // the server forgot the statement
constexpr unsigned int kErUnsupportedPs = 1295;       // not preparable
constexpr unsigned int kErNeedReprepare = 1615;       // metadata changed; prepare again
constexpr unsigned int kErHostNotPrivileged = 1130;   // "Host '...' is not allowed to connect"
constexpr unsigned int kErAccessDeniedNoPassword = 1698;
constexpr unsigned int kErMustChangePassword = 1820;
constexpr unsigned int kErMustChangePasswordLogin = 1862;
constexpr unsigned int kErBadDb = 1049;
constexpr unsigned int kCrStmtClosed = 2056;       // closed by mysql_change_user / reset
constexpr unsigned int kCrNewStmtMetadata = 2057;  // column count changed since prepare

std::string_view or_empty(const char* s) { return s == nullptr ? std::string_view() : s; }

// The SQLSTATE to report: five characters, or none.
std::string sqlstate_of(const char* s) {
  std::string_view v = or_empty(s);
  return v.size() == 5 ? std::string(v) : std::string();
}

ErrorCode classify(unsigned int err, std::string_view sqlstate) {
  switch (err) {
    case kErHostNotPrivileged:
    case kErAccessDeniedNoPassword:
    case kErMustChangePassword:
    case kErMustChangePasswordLogin:
      return ErrorCode::kAccessDenied;
    default:
      break;
  }
  ErrorCode code = detail::code_from_mysql_errno(err);
  // Class 08 (connection exception): e.g. a packet over max_allowed_packet or a network read
  // error; the server closes the connection after sending these.
  if (code == ErrorCode::kOther && sqlstate.starts_with("08")) return ErrorCode::kConnectionLost;
  return code;
}

Error make_error(unsigned int err, std::string_view message, const char* sqlstate_text,
                 std::string_view where, std::string_view secret) {
  std::string sqlstate = sqlstate_of(sqlstate_text);
  ErrorCode code = classify(err, sqlstate);
  if (message.empty()) message = "unknown client library error";
  return detail::driver_error(code, where, message, secret, std::move(sqlstate),
                              static_cast<int>(err));
}

}  // namespace

Error connection_error(MYSQL* conn, std::string_view where, std::string_view secret) {
  return make_error(mysql_errno(conn), or_empty(mysql_error(conn)), mysql_sqlstate(conn), where,
                    secret);
}

Error statement_error(MYSQL_STMT* stmt, std::string_view where, std::string_view secret) {
  return make_error(mysql_stmt_errno(stmt), or_empty(mysql_stmt_error(stmt)),
                    mysql_stmt_sqlstate(stmt), where, secret);
}

Error connect_error(MYSQL* conn, std::string_view where, std::string_view secret,
                    std::string_view database) {
  unsigned int err = mysql_errno(conn);
  std::string sqlstate = sqlstate_of(mysql_sqlstate(conn));
  std::string message(or_empty(mysql_error(conn)));
  if (message.empty()) message = "could not connect";
  ErrorCode code = classify(err, sqlstate);
  if (err == kErBadDb) {
    message = "database '" + std::string(database) + "' does not exist";
  }
  // Whatever else stopped the handshake (refused, unreachable, timeout, TLS, cut short, too many
  // connections) means the connection could not be opened.
  if (code != ErrorCode::kAccessDenied) code = ErrorCode::kConnectFailed;
  return detail::driver_error(code, where, message, secret, std::move(sqlstate),
                              static_cast<int>(err));
}

unsigned int statement_errno(MYSQL_STMT* stmt) noexcept { return mysql_stmt_errno(stmt); }

bool is_stale_statement(unsigned int err) noexcept {
  return err == kErNeedReprepare || err == kErUnknownStmtHandler || err == kCrStmtClosed ||
         err == kCrNewStmtMetadata;
}

bool is_unsupported_prepare(unsigned int err) noexcept { return err == kErUnsupportedPs; }

Error invalid_argument_error(std::string_view where, std::string_view message) {
  return detail::driver_error(ErrorCode::kInvalidArgument, where, message, {});
}

Error connect_failed_error(std::string_view where, std::string_view message) {
  return detail::driver_error(ErrorCode::kConnectFailed, where, message, {});
}

Error client_error(std::string_view where, std::string_view message) {
  return detail::driver_error(ErrorCode::kOther, where, message, {});
}

}  // namespace dblock::mysql_driver
