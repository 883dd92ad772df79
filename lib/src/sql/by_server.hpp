// SPDX-License-Identifier: Apache-2.0
// Statements rendered once for each server that speaks a dialect (PostgreSQL; or MySQL and
// MariaDB), and picked per call by the server of the connection at hand (Connection::server()),
// for the strategies that render their statements when they are built, before they have a
// connection to ask. Internal.
//
//   struct Statements { Statement acquire, release; };
//   ByServer<Statements> statements(dialect, [&](const ServerSql& sql) {
//     return Statements{Statement(sql.unique_key.acquire, dialect, tables), ...};
//   });
//   const Statement& acquire = statements[conn.server()].acquire;
//
// Thread-safety: immutable once built.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

template <class T>
class ByServer {
 public:
  // Calls render(server_sql(s)) for each server s of `dialect`.
  template <class Render>
  ByServer(Dialect dialect, Render render) : dialect_(dialect) {
    for (Server s : {Server::kPostgreSQL, Server::kMySQL, Server::kMariaDB}) {
      if (dialect_of(s) == dialect) slots_[index(s)].emplace(render(server_sql(s)));
    }
  }

  // Throws Error(kFailedPrecondition) for a server of another dialect (a connection source
  // whose connections do not speak the dialect it declares).
  const T& operator[](Server server) const {
    const std::optional<T>& slot = slots_[index(server)];
    if (!slot) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "a connection to " + std::string(to_string(server)) +
                      " came from a connection source that declares the " +
                      std::string(to_string(dialect_)) +
                      " dialect; give the lock a source of that server's connections");
    }
    return *slot;
  }

 private:
  static std::size_t index(Server server) noexcept { return static_cast<std::size_t>(server); }

  Dialect dialect_;
  std::array<std::optional<T>, 3> slots_;
};

}  // namespace dblock::detail
