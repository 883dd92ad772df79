// SPDX-License-Identifier: Apache-2.0
// Turns libpq failures into dblock::Error for the libpq driver. Internal to the
// dblock_postgresql target.
//
// Thread-safety: each function reads the handles it is given; one thread at a time per session.
#pragma once

#include <libpq-fe.h>

#include <string_view>

#include "dblock/error.hpp"

namespace dblock::libpq_driver {

// Classifies a statement that failed on `pg`: `result` is what PQexec/PQexecParams returned
// (null when libpq could not even build a result). By the result's SQLSTATE; a statement that
// left the connection no longer open lost it (kConnectionLost), whatever the SQLSTATE; a
// protocol violation the server reported on a connection still open (08P01, e.g. a wrong number
// of parameters) is the caller's error (kInvalidArgument). `where` names the server; `secret` is
// scrubbed from the text.
Error statement_error(PGconn* pg, const PGresult* result, std::string_view where,
                      std::string_view secret);

// Classifies a connection libpq could not open (PQstatus not CONNECTION_OK), from its message:
// bad credentials -> kAccessDenied, a bad connection option -> kInvalidArgument, anything else
// (refused, unreachable, unknown host, unknown database, timeout) -> kConnectFailed.
Error connect_error(PGconn* pg, std::string_view where, std::string_view secret);

}  // namespace dblock::libpq_driver
