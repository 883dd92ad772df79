// SPDX-License-Identifier: Apache-2.0
/// @file
/// PostgreSQL or MySQL/MariaDB through SOCI (target dblock::soci).
///
/// wrap_soci() adapts a soci::session the service owns, soci_pool_source() draws sessions from
/// the service's soci::connection_pool, and connect_soci() opens a session from a URL. The dialect
/// is taken from the session's backend ("postgresql" or "mysql").
///
/// Thread-safety: as for dblock::Connection and dblock::ConnectionSource. Wrapped sessions and
/// pools must outlive the returned objects.
#pragma once

#include <soci/soci.h>

#include <memory>

#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

DBLOCK_EXPORT std::unique_ptr<Connection> wrap_soci(soci::session& session);

/// A source lending the pool's sessions; `size` must be the pool's size.
DBLOCK_EXPORT std::unique_ptr<ConnectionSource> soci_pool_source(soci::connection_pool& pool,
                                                                 std::size_t size);

/// Opens a session from a URL (postgresql:// or mysql://).
DBLOCK_EXPORT std::unique_ptr<Connection> connect_soci(const DatabaseUrl& url);

}  // namespace dblock
