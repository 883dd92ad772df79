// SPDX-License-Identifier: Apache-2.0
// Turns libpqxx and libpq failures into dblock::Error: the one place the PostgreSQL driver
// classifies native errors. Internal to the dblock_postgresql target.
//
// Thread-safety: pure functions.
#pragma once

#include <exception>
#include <string_view>

#include "dblock/error.hpp"

namespace dblock::pqxx_driver {

// Classifies an exception a statement raised. `still_open` is the connection's state after the
// failure: a statement that left the connection closed lost it, whatever the exception says.
// `where` names the server ("PostgreSQL 127.0.0.1:5432/app"); `secret` is scrubbed from the text.
Error statement_error(const std::exception& e, bool still_open, std::string_view where,
                      std::string_view secret);

// Classifies an exception raised while opening a connection, from libpq's message: bad
// credentials -> kAccessDenied, a bad connection option -> kInvalidArgument, anything else
// (refused, unreachable, unknown host, unknown database, timeout) -> kConnectFailed.
Error connect_error(const std::exception& e, std::string_view where, std::string_view secret);

}  // namespace dblock::pqxx_driver
