// SPDX-License-Identifier: Apache-2.0
#include "dblock/open.hpp"

#include "dblock/error.hpp"
#include "driver_registry.hpp"

namespace dblock {

namespace {

bool serves(const detail::KnownDriver& d, Dialect dialect) {
  return dialect == Dialect::kPostgreSQL ? d.postgresql : d.mysql;
}

// "dblock::postgresql (pkg-config: dblock-postgresql)".
std::string link_hint(const detail::KnownDriver& d) {
  return std::string(d.target) + " (pkg-config: " + std::string(d.pkgconfig) + ")";
}

[[noreturn]] void throw_no_driver(Dialect dialect) {
  std::string targets;
  std::string names;
  for (const detail::KnownDriver& d : detail::known_drivers()) {
    if (!serves(d, dialect)) continue;
    targets += (targets.empty() ? "" : ", ") + link_hint(d);
    names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  throw Error(ErrorCode::kInvalidArgument, "no " + std::string(to_string(dialect)) +
                                               " driver is linked into this program: link one of " +
                                               targets + " (drivers " + names + ")");
}

}  // namespace

std::vector<std::string> available_drivers(Dialect dialect) {
  std::vector<std::string> out;
  for (const detail::KnownDriver& d : detail::known_drivers()) {
    if (serves(d, dialect) && detail::registered_driver(d.name) != nullptr) {
      out.emplace_back(d.name);
    }
  }
  return out;
}

std::unique_ptr<Connection> open_connection(const DatabaseUrl& url) {
  if (url.driver.empty()) {
    const std::vector<std::string> drivers = available_drivers(url.dialect);
    if (drivers.empty()) throw_no_driver(url.dialect);
    return detail::registered_driver(drivers.front())(url);
  }
  for (const detail::KnownDriver& d : detail::known_drivers()) {
    if (d.name != url.driver || !serves(d, url.dialect)) continue;
    const detail::DriverOpen open = detail::registered_driver(d.name);
    if (open == nullptr) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "driver '" + url.driver + "' is not available in this program: link " + link_hint(d));
    }
    return open(url);
  }
  std::string names;
  for (const detail::KnownDriver& d : detail::known_drivers()) {
    if (serves(d, url.dialect)) names += (names.empty() ? "" : ", ") + std::string(d.name);
  }
  throw Error(ErrorCode::kInvalidArgument, "driver '" + url.driver + "' is not available for " +
                                               std::string(to_string(url.dialect)) +
                                               " URLs; dblock's drivers for them: " + names);
}

std::unique_ptr<Pool> open_pool(const DatabaseUrl& url, PoolOptions options) {
  if (url.transaction_pooler) options.dedicated_sessions = false;
  return std::make_unique<Pool>(
      url.dialect, [url] { return open_connection(url); }, options);
}

}  // namespace dblock
