// SPDX-License-Identifier: Apache-2.0
// Connection strings for SOCI's PostgreSQL and MySQL backends (see connect_string.hpp).
//
// Thread-safety: pure functions.
#include "drivers/soci/connect_string.hpp"

#include <string>

#include "drivers/connect_options.hpp"
#include "drivers/soci/errors.hpp"
#include "libpq_uri.hpp"

namespace dblock::soci_driver {
// The connection URI the libpq and libpqxx drivers open too (libpq_uri.hpp), so that every
// PostgreSQL driver connects alike; SOCI's PostgreSQL backend hands it to PQconnectdb, whose own
// parser reads it. Every part is percent-encoded: SOCI 4.0's PostgreSQL backend splits the
// connection string at every space (looking for its own "singlerow" option) and glues the pieces
// back together, which would break a value containing one.
std::string postgresql_connect_string(const DatabaseUrl& url) {
  return detail::libpq_uri(url, true);
}

// SOCI's MySQL keys. SOCI rejects unknown keys and repeated ones, so only a documented set of
// URL parameters is accepted.
std::string mysql_connect_string(const DatabaseUrl& url, std::string_view where) {
  std::string out;
  if (!url.host.empty()) detail::append_quoted_option(out, "host", url.host);
  detail::append_quoted_option(out, "port", std::to_string(url.effective_port()));
  if (!url.user.empty()) detail::append_quoted_option(out, "user", url.user);
  if (!url.password.empty()) detail::append_quoted_option(out, "password", url.password);
  if (!url.database.empty()) detail::append_quoted_option(out, "db", url.database);
  detail::append_quoted_option(out, "charset", "utf8mb4");
  if (!url.param("connect_timeout")) detail::append_quoted_option(out, "connect_timeout", "10");
  for (const auto& [key, value] : url.params) {
    if (key == "connect_timeout" || key == "read_timeout" || key == "write_timeout") {
      bool valid = !value.empty() && value.size() <= 9 &&
                   value.find_first_not_of("0123456789") == std::string::npos &&
                   std::stoul(value) > 0;
      if (!valid) {
        throw invalid_argument_error(
            where, "URL parameter \"" + key + "\" must be a positive number of seconds");
      }
      detail::append_quoted_option(out, key, value);
    } else if (key == "socket" || key == "unix_socket") {
      detail::append_quoted_option(out, "unix_socket", value);
    } else {
      throw invalid_argument_error(
          where, "URL parameter \"" + key +
                     "\" is not supported by the SOCI MySQL driver (supported: connect_timeout, "
                     "read_timeout, write_timeout, socket)");
    }
  }
  return out;
}

}  // namespace dblock::soci_driver
