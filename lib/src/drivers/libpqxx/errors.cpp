// SPDX-License-Identifier: Apache-2.0
// Classification of libpqxx / libpq failures for the PostgreSQL driver (see errors.hpp).
//
// Thread-safety: pure functions.
#include "drivers/libpqxx/errors.hpp"

#include <pqxx/except>
#include <string>

#include "drivers/error_mapping.hpp"

namespace dblock::pqxx_driver {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

Error statement_error(const std::exception& e, bool still_open, std::string_view where,
                      std::string_view secret) {
  std::string sqlstate;
  ErrorCode code = ErrorCode::kOther;
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    sqlstate = sql->sqlstate();
    // libpqxx 6 throws insufficient_privilege without its SQLSTATE; the class names it.
    if (sqlstate.empty() && dynamic_cast<const pqxx::insufficient_privilege*>(&e) != nullptr) {
      sqlstate = "42501";
    }
    if (!sqlstate.empty()) code = detail::code_from_sqlstate(sqlstate);
  } else if (dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr) {
    // libpqxx 6 derives the transaction_rollback family from failure, not sql_error, so these
    // carry no SQLSTATE; the class names it.
    sqlstate = "40P01";
    code = ErrorCode::kDeadlock;
  } else if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr) {
    sqlstate = "40001";
    code = ErrorCode::kSerializationFailure;
  } else if (still_open && contains(e.what(), "bind message supplies")) {
    // libpqxx 6 throws broken_connection for every SQLSTATE of class 08, including this
    // protocol_violation (08P01: wrong number of parameters), which leaves the connection open.
    code = ErrorCode::kInvalidArgument;
  }
  // libpqxx 8 throws that protocol_violation as an sql_error carrying 08P01, whose class reads as
  // a lost connection: on a connection libpq still reports open, the server refused the message
  // and goes on.
  if (still_open && code == ErrorCode::kConnectionLost) {
    code = sqlstate == "08P01" ? ErrorCode::kInvalidArgument : ErrorCode::kOther;
  }
  // Whatever libpqxx threw (broken_connection, in_doubt_error, a bare failure), the connection
  // is lost exactly when libpq no longer reports it open.
  std::string message = detail::libpq_message_text(e.what());
  if (!still_open) {
    code = ErrorCode::kConnectionLost;
    // libpqxx's own text here is often unhelpful ("Could not obtain client encoding").
    if (sqlstate.empty()) message = "the connection broke during the statement (" + message + ")";
  }
  return detail::driver_error(code, where, message, secret, std::move(sqlstate));
}

Error connect_error(const std::exception& e, std::string_view where, std::string_view secret) {
  std::string message = detail::libpq_message_text(e.what());
  std::string sqlstate;
  ErrorCode code = detail::libpq_connect_code(message);
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
      sql != nullptr && !sql->sqlstate().empty()) {
    sqlstate = sql->sqlstate();
    code = detail::code_from_sqlstate(sqlstate);
    if (code == ErrorCode::kConnectionLost || code == ErrorCode::kOther) {
      code = ErrorCode::kConnectFailed;
    }
  }
  return detail::driver_error(code, where, message, secret, std::move(sqlstate));
}

}  // namespace dblock::pqxx_driver
