// SPDX-License-Identifier: Apache-2.0
// Classification of libpq failures for the libpq driver (see errors.hpp).
#include "drivers/libpq/errors.hpp"

#include <string>

#include "drivers/error_mapping.hpp"

namespace dblock::libpq_driver {

Error statement_error(PGconn* pg, const PGresult* result, std::string_view where,
                      std::string_view secret) {
  const bool still_open = PQstatus(pg) == CONNECTION_OK;
  std::string sqlstate;
  const char* text = nullptr;
  if (result != nullptr) {
    if (const char* s = PQresultErrorField(result, PG_DIAG_SQLSTATE)) sqlstate = s;
    text = PQresultErrorMessage(result);
  }
  if (text == nullptr || *text == '\0') text = PQerrorMessage(pg);
  std::string message = detail::libpq_message_text(text == nullptr ? "" : text);
  ErrorCode code = sqlstate.empty() ? ErrorCode::kOther : detail::code_from_sqlstate(sqlstate);
  if (still_open && sqlstate == "08P01") code = ErrorCode::kInvalidArgument;
  if (!still_open) {
    code = ErrorCode::kConnectionLost;
    if (sqlstate.empty()) message = "the connection broke during the statement (" + message + ")";
  }
  if (message.empty()) message = "the statement failed without a message from libpq";
  return detail::driver_error(code, where, message, secret, std::move(sqlstate));
}

Error connect_error(PGconn* pg, std::string_view where, std::string_view secret) {
  const char* text = pg == nullptr ? nullptr : PQerrorMessage(pg);
  std::string message = text == nullptr || *text == '\0'
                            ? std::string("libpq could not allocate a connection")
                            : detail::libpq_message_text(text);
  return detail::driver_error(detail::libpq_connect_code(message), where, message, secret);
}

}  // namespace dblock::libpq_driver
