// SPDX-License-Identifier: Apache-2.0
// What libpq makes of a URL (see conninfo.hpp).
#include "drivers/libpq/conninfo.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <memory>

#include "drivers/error_mapping.hpp"
#include "libpq_uri.hpp"

namespace dblock::libpq_driver {
namespace {

struct OptionsDeleter {
  void operator()(PQconninfoOption* options) const noexcept { PQconninfoFree(options); }
};
using Options = std::unique_ptr<PQconninfoOption, OptionsDeleter>;

Error invalid_url(std::string_view where, const std::string& message, std::string_view secret) {
  return detail::driver_error(ErrorCode::kInvalidArgument, where, message, secret);
}

// The value libpq parsed for `keyword`, "" when the URL does not set it.
std::string value_of(const PQconninfoOption* options, std::string_view keyword) {
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (keyword == o->keyword) return o->val == nullptr ? "" : o->val;
  }
  return "";
}

// Where libpq connects: its host (or hostaddr) and port lists, which override what the URL's
// authority says. A list of ports must give one port for every host, or one for all, as libpq
// requires when it connects; checked here, before any connection is tried.
std::string servers(const PQconninfoOption* options, const DatabaseUrl& url,
                    std::string_view driver, std::string_view fallback_where) {
  std::string hosts = value_of(options, "host");
  if (hosts.empty()) hosts = value_of(options, "hostaddr");
  const std::string ports = value_of(options, "port");
  const auto count = [](const std::string& list) {
    return 1 + static_cast<std::size_t>(std::count(list.begin(), list.end(), ','));
  };
  if (count(ports) > 1 && count(ports) != count(hosts)) {
    throw invalid_url(fallback_where,
                      "the URL lists " + std::to_string(count(ports)) + " ports for " +
                          std::to_string(count(hosts)) + " host(s) (the " + std::string(driver) +
                          " driver); give one port, or one for each host",
                      url.password);
  }
  const std::string dbname = value_of(options, "dbname");
  return detail::postgresql_location(hosts, ports, dbname.empty() ? url.database : dbname);
}

}  // namespace

Conninfo parse_conninfo(const DatabaseUrl& url, std::string_view driver) {
  if (url.dialect != Dialect::kPostgreSQL) {
    const std::string where = detail::server_location(
        url.dialect, url.host, std::to_string(url.effective_port()), url.database);
    throw invalid_url(where, "the " + std::string(driver) + " driver needs a postgresql:// URL",
                      url.password);
  }
  const std::string where = detail::postgresql_location(url);
  // Parsed without the password, so that no message of libpq's can show it.
  const std::string checked = detail::libpq_uri(url, false);
  char* error = nullptr;
  Options options(PQconninfoParse(checked.c_str(), &error));
  if (options == nullptr) {
    const std::string message =
        error == nullptr ? std::string("libpq could not parse the URL (out of memory)") : error;
    PQfreemem(error);
    throw invalid_url(where,
                      message + " (the " + std::string(driver) +
                          " driver; URL parameters must be libpq connection keywords)",
                      url.password);
  }
  return {detail::libpq_uri(url, true), servers(options.get(), url, driver, where)};
}

std::string conninfo(const DatabaseUrl& url, std::string_view, std::string_view driver) {
  return parse_conninfo(url, driver).text;
}

}  // namespace dblock::libpq_driver
