// The connection strings the SOCI driver opens sessions with, built from a dblock URL: a libpq
// connection URI for SOCI's PostgreSQL backend, SOCI's key='value' form for its MySQL backend.
// Internal to the dblock_soci target.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/url.hpp"

namespace dblock::soci_driver {

// "postgresql://?host=...&port=...&password=...": every setting a percent-encoded query
// parameter; URL parameters pass through as libpq keywords. Throws Error(kInvalidArgument)
// (message prefixed with `where`) for a parameter name that is not a keyword.
std::string postgresql_connect_string(const DatabaseUrl& url, std::string_view where);

// "host='...' port='...' db='...' ...": SOCI's MySQL keys with the utf8mb4 character set and a
// 10 s connect timeout by default. Accepts the URL parameters connect_timeout, read_timeout,
// write_timeout and socket (or unix_socket); throws Error(kInvalidArgument) for others.
std::string mysql_connect_string(const DatabaseUrl& url, std::string_view where);

}  // namespace dblock::soci_driver
