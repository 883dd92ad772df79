// What the SOCI driver does with the native libpq handles under SOCI's PostgreSQL backend, where
// SOCI itself falls short: reading booleans as booleans, reading columns SOCI cannot describe,
// and waiting for notifications. Internal to the dblock_soci target.
//
// Thread-safety: each function uses the handle it is given; one thread at a time per session.
#pragma once

#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
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

// Connection::wait_for_notifications() on a PostgreSQL session. Notifications libpq queued while
// earlier statements ran come back at once; otherwise waits (poll(), EINTR-safe) on the socket up
// to `timeout` and lets libpq read (PQconsumeInput) until one arrives. Notifications read before
// the connection broke are returned first. Throws Error(kConnectionLost) when the connection is
// (or becomes) unusable: `pg` null, `broken` set, or a failed read on a closed connection; other
// failures are Error(kOther). `where` and `secret` as for statement_error().
std::vector<Notification> wait_for_notifications(PGconn* pg, bool broken,
                                                 std::chrono::milliseconds timeout,
                                                 std::string_view where, std::string_view secret);

}  // namespace dblock::soci_driver
