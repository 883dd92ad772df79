// SPDX-License-Identifier: Apache-2.0
#include "resource.hpp"

namespace dblock::testing {

namespace {
std::string param(const Connection& conn, int n) {
  return conn.dialect() == Dialect::kPostgreSQL ? "$" + std::to_string(n) : "?";
}
}  // namespace

std::uint64_t increment_counter(Connection& conn, const TableNames& tables,
                                const std::string& writer) {
  return conn
      .execute("UPDATE " + tables.qualified(conn.dialect(), "resource") +
                   " SET token = token + 1, writer = " + param(conn, 1) + " WHERE id = 1",
               {Value(writer)})
      .affected_rows();
}

void insert_mark(Connection& conn, const TableNames& tables, std::int64_t id,
                 const std::string& writer) {
  conn.execute("INSERT INTO " + tables.qualified(conn.dialect(), "resource") +
                   " (id, token, writer) VALUES (" + param(conn, 1) + ", 0, " + param(conn, 2) +
                   ")",
               {Value(id), Value(writer)});
}

}  // namespace dblock::testing
