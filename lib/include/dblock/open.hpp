// SPDX-License-Identifier: Apache-2.0
/// @file
/// Opening connections from a URL with the drivers linked into the program (target dblock::core;
/// each driver library, dblock::postgresql, dblock::libpqxx, dblock::mysql or dblock::soci,
/// registers itself when linked). A URL whose driver is not linked is refused with an error that
/// names the library to link.
///
/// @code
///   auto pool = dblock::open_pool(dblock::DatabaseUrl::resolve(std::nullopt), {.max_size = 4});
/// @endcode
///
/// postgresql:// uses libpq (libpq.hpp) and mysql:// uses libmysqlclient unless the URL says
/// ?driver=libpqxx or ?driver=soci (or names the default driver explicitly).
///
/// Thread-safety: the functions are safe to call from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

/// Opens one connection. Throws Error(kInvalidArgument) when the URL's driver is not linked into
/// the program (or dblock has no such driver), and the driver's errors (kConnectFailed,
/// kAccessDenied, ...) otherwise.
DBLOCK_EXPORT std::unique_ptr<Connection> open_connection(const DatabaseUrl& url);

/// A built-in pool that opens connections for `url` on demand. With ?pool_mode=transaction it
/// opens no dedicated sessions (PoolOptions::dedicated_sessions = false).
DBLOCK_EXPORT std::unique_ptr<Pool> open_pool(const DatabaseUrl& url, PoolOptions options = {});

/// The drivers linked into this program for a dialect, default first ("libpq", "libpqxx", "soci").
DBLOCK_EXPORT std::vector<std::string> available_drivers(Dialect dialect);

}  // namespace dblock
