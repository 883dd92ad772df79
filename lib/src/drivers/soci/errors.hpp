// SPDX-License-Identifier: Apache-2.0
// Turns SOCI failures (from its PostgreSQL and MySQL backends) into dblock::Error: the one place
// the SOCI driver classifies native errors. Internal to the dblock_soci target.
//
// Thread-safety: pure functions.
#pragma once

#include <exception>
#include <string_view>

#include "dblock/dialect.hpp"
#include "dblock/error.hpp"

namespace dblock::soci_driver {

// Classifies an exception a statement raised. `still_open` is the connection's state after the
// failure as far as the driver can tell: a statement that left the connection closed lost it,
// whatever the exception says. `where` names the server ("PostgreSQL 127.0.0.1:5432/app");
// `secret` is scrubbed from the text.
Error statement_error(const std::exception& e, Dialect dialect, bool still_open,
                      std::string_view where, std::string_view secret);

// Classifies an exception raised while opening a session: bad credentials -> kAccessDenied, a
// bad connection option -> kInvalidArgument, anything else (refused, unreachable, unknown host,
// unknown database, timeout) -> kConnectFailed.
Error connect_error(const std::exception& e, Dialect dialect, std::string_view where,
                    std::string_view secret);

// A URL or session the driver cannot use (kInvalidArgument).
Error invalid_argument_error(std::string_view where, std::string_view message);

}  // namespace dblock::soci_driver
