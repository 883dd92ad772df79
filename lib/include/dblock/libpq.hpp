// SPDX-License-Identifier: Apache-2.0
/// @file
/// PostgreSQL through libpq itself (target dblock::postgresql; needs libpq and nothing else).
///
/// connect_libpq() opens a connection from a postgresql:// URL for the strategies and the
/// migrator; it is what open_connection() and open_pool() use for postgresql:// URLs unless the
/// URL says ?driver=libpqxx or ?driver=soci. Each statement is one PQexecParams (PQexec without
/// parameters, so a script of several statements also runs): no statement objects and no reads
/// of the socket beyond the statement's own, so it costs less per call than the libpqxx driver.
/// A service that owns a pqxx::connection hands it in with wrap_pqxx() (libpqxx.hpp).
///
/// Thread-safety: as for dblock::Connection (one thread at a time).
#pragma once

#include <memory>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

/// Opens a connection from a postgresql:// URL. Throws Error(kConnectFailed, kAccessDenied,
/// kInvalidArgument) with a redacted, one-line message.
DBLOCK_EXPORT std::unique_ptr<Connection> connect_libpq(const DatabaseUrl& url);

}  // namespace dblock
