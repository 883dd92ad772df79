// What the SOCI driver does with the native libpq handles under SOCI's PostgreSQL backend, where
// SOCI itself falls short: reading booleans as booleans and reading columns SOCI cannot describe
// (waiting for notifications is drivers/libpq/notifications.hpp's). Internal to the dblock_soci
// target.
//
// Thread-safety: each function uses the handle it is given; one thread at a time per session.
#pragma once

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "dblock/connection.hpp"

namespace dblock::soci_driver {

// Which of the `count` columns of the statement's current PostgreSQL result are booleans (SOCI
// reads them as integers). All false when the result is not available.
std::vector<bool> boolean_columns(soci::statement& st, std::size_t count);

// SOCI 4.0 cannot describe PostgreSQL columns of some fixed-size types (void, as pg_notify() and
// pg_sleep() return; uuid; interval) and throws "unknown data type" after the statement ran. The
// rows are in the statement's PGresult all the same: this reads them from there, as text, so a
// statement that took effect does not fail. nullopt when `e` is any other failure.
std::optional<Result> undescribed_result(soci::statement& st, const soci::soci_error& e);

// True when the statement's PostgreSQL result is a COPY's (SOCI then throws an error without a
// message; libpq ends the COPY at the next statement).
bool answered_copy(soci::statement& st);

}  // namespace dblock::soci_driver
