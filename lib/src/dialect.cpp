// SPDX-License-Identifier: Apache-2.0
// The names of dialects and servers, and a server's dialect (dblock/dialect.hpp).
//
// Thread-safety: pure functions.
#include "dblock/dialect.hpp"

#include "enum_names.hpp"

namespace dblock {

std::string_view to_string(Dialect dialect) noexcept {
  return dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql";
}

std::string_view to_string(Server server) noexcept {
  constexpr auto kNames = detail::enum_names<Server::kMariaDB>({"postgresql", "mysql", "mariadb"});
  return kNames.of(server, "unknown");
}

Dialect dialect_of(Server server) noexcept {
  return server == Server::kPostgreSQL ? Dialect::kPostgreSQL : Dialect::kMySQL;
}

}  // namespace dblock
