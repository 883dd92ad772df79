// SPDX-License-Identifier: Apache-2.0
// The connection strings the SOCI driver opens sessions with, built from a dblock URL: the libpq
// connection URI for SOCI's PostgreSQL backend, SOCI's key='value' form for its MySQL backend.
// Internal to the dblock_soci target.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/url.hpp"

namespace dblock::soci_driver {

// detail::libpq_uri(url, true): what every PostgreSQL driver connects with. libpq checks the
// parameters when SOCI's backend connects.
std::string postgresql_connect_string(const DatabaseUrl& url);

// "host='...' port='...' db='...' ...": SOCI's MySQL keys with the utf8mb4 character set and a
// 10 s connect timeout by default. Accepts the URL parameters connect_timeout, read_timeout,
// write_timeout and socket (or unix_socket); throws Error(kInvalidArgument) for others.
std::string mysql_connect_string(const DatabaseUrl& url, std::string_view where);

}  // namespace dblock::soci_driver
