// SPDX-License-Identifier: Apache-2.0
// What the SOCI driver reads off the native libpq handles under SOCI's PostgreSQL backend: a
// statement's result, read as the libpq driver reads one (waiting for notifications is
// drivers/libpq/notifications.hpp's). Internal to the dblock_soci target.
//
// Thread-safety: each function uses the handle it is given; one thread at a time per session.
#pragma once

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include "dblock/connection.hpp"

namespace dblock::soci_driver {

// The result of a statement SOCI ran without into elements, read off its PGresult as the libpq
// driver reads one: every column as text (booleans as t and f), NULL as an empty optional, and
// the count in the command tag as the affected rows.
Result postgresql_result(soci::statement& st);

// True when the statement's PostgreSQL result is a COPY's (SOCI then throws an error without a
// message; libpq ends the COPY at the next statement).
bool answered_copy(soci::statement& st);

}  // namespace dblock::soci_driver
