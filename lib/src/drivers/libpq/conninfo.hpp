// SPDX-License-Identifier: Apache-2.0
// What libpq makes of a postgresql:// URL: the connection string every PostgreSQL driver opens
// (detail::libpq_uri), checked by libpq's own parser, and where it connects, for messages.
// Shared by the libpq and libpqxx drivers. Internal to the dblock_postgresql target.
//
//   const libpq_driver::Conninfo c = libpq_driver::parse_conninfo(url, "libpq");
//   PGconn* conn = PQconnectdb(c.text.c_str());   // errors name c.where
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/url.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::libpq_driver {

struct Conninfo {
  std::string text;   // the connection URI, password included: never shown
  std::string where;  // "PostgreSQL db1:5432,db2:5433/app": the servers and database libpq uses
};

// Checks the URL with libpq's parser (PQconninfoParse) and returns its connection string.
// Throws Error(kInvalidArgument), naming the servers and `driver` and never the password, for a
// URL that is not postgresql://, a parameter that is not a libpq connection keyword (as libpq
// words it), or a list of ports that does not match the list of hosts.
Conninfo parse_conninfo(const DatabaseUrl& url, std::string_view driver);

// parse_conninfo(url, driver).text, for callers that name the server themselves (`where` is
// not used: messages name the servers libpq parsed).
std::string conninfo(const DatabaseUrl& url, std::string_view where, std::string_view driver);

}  // namespace dblock::libpq_driver

#pragma GCC visibility pop
