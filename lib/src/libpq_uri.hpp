// SPDX-License-Identifier: Apache-2.0
// The connection URI libpq is given for a postgresql:// URL: one text for every PostgreSQL driver
// (the libpq and libpqxx drivers pass it to PQconnectdb, the SOCI driver to SOCI's PostgreSQL
// backend, which passes it to PQconnectdb), so each connects alike. Pure text work: dblock's core
// builds it without linking libpq; the drivers have libpq parse it (PQconninfoParse).
//
//   detail::libpq_uri(url, false)  // postgresql://db1:5432,db2:5433/app?target_session_attrs=...
//
// Internal, but called by the driver libraries: exported from a shared build like the public API
// (this header is not installed). Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "dblock/url.hpp"

#pragma GCC visibility push(default)

namespace dblock::detail {

// "postgresql://host:port,host:port/dbname?keyword=value&...": the URL's servers (socket
// directories percent-encoded), database and driver parameters in order, dblock's own
// parameters (driver, pool_mode) left out; connect_timeout=10 and fallback_application_name=
// dblock unless the URL sets them. With `credentials`, also the user and password as the user
// and password keywords (the user unless a user parameter overrides it, as libpq does). Every
// name and value is percent-encoded, so the text holds no space (SOCI 4.0 splits its connection
// string at spaces).
std::string libpq_uri(const DatabaseUrl& url, bool credentials);

// How messages name the servers of libpq's host and port lists ("db1,db2", "5432,5433"; one port
// for every host, or one for all; an empty host is the default socket, an empty port 5432):
// "PostgreSQL db1:5432,db2:5433/app".
std::string postgresql_location(std::string_view hosts, std::string_view ports,
                                std::string_view dbname);
// The same for a URL, as libpq reads it: host, port and dbname parameters over the URL's
// authority and path.
std::string postgresql_location(const DatabaseUrl& url);

}  // namespace dblock::detail

#pragma GCC visibility pop
