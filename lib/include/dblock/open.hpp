// Opening connections from a URL with whichever drivers this build of dblock includes
// (target dblock::dblock, which links every driver that was built).
//
// postgresql:// uses libpq (libpq.hpp) and mysql:// uses libmysqlclient unless the URL says
// ?driver=libpqxx or ?driver=soci (or names the default driver explicitly).
//
// Thread-safety: the functions are safe to call from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/url.hpp"

namespace dblock {

// Opens one connection. Throws Error(kInvalidArgument) when the URL names a driver that is not
// built in, and the driver's errors (kConnectFailed, kAccessDenied, ...) otherwise.
std::unique_ptr<Connection> open_connection(const DatabaseUrl& url);

// A built-in pool that opens connections for `url` on demand. With ?pool_mode=transaction it
// opens no dedicated sessions (PoolOptions::dedicated_sessions = false).
std::unique_ptr<Pool> open_pool(const DatabaseUrl& url, PoolOptions options = {});

// The drivers built into this library for a dialect, default first ("libpq", "libpqxx", "soci").
std::vector<std::string> available_drivers(Dialect dialect);

}  // namespace dblock
