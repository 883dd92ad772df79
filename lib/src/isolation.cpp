// SPDX-License-Identifier: Apache-2.0
#include "isolation.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "sql/server_sql.hpp"

namespace dblock::detail {

namespace {

const char* level_name(Isolation level) {
  switch (level) {
    case Isolation::kReadUncommitted:
      return "READ UNCOMMITTED";
    case Isolation::kRepeatableRead:
      return "REPEATABLE READ";
    case Isolation::kSerializable:
      return "SERIALIZABLE";
    default:
      return "READ COMMITTED";
  }
}

// "read committed" (PostgreSQL) and "READ-COMMITTED" (MySQL) alike.
Isolation parse_level(std::string text) {
  for (char& c : text) c = c == '-' ? ' ' : static_cast<char>(std::tolower(c));
  if (text == "read uncommitted") return Isolation::kReadUncommitted;
  if (text == "read committed") return Isolation::kReadCommitted;
  if (text == "repeatable read") return Isolation::kRepeatableRead;
  if (text == "serializable") return Isolation::kSerializable;
  return Isolation::kUnknown;
}

}  // namespace

void begin_at(Connection& conn, Isolation level) {
  const std::string set = std::string("SET TRANSACTION ISOLATION LEVEL ") + level_name(level);
  if (conn.dialect() == Dialect::kPostgreSQL) {
    conn.begin();
    try {
      conn.execute(set);
    } catch (...) {
      conn.rollback();
      throw;
    }
  } else {
    conn.execute(set);
    conn.begin();
  }
}

Isolation SessionIsolation::default_level(Connection& conn) {
  Isolation known = level_.load();
  if (known != Isolation::kUnknown) return known;
  Result r = conn.execute(server_sql(conn.server()).session.isolation);
  const Isolation level = parse_level(last_column(r));
  // An answer nobody knows is treated as the strictest, so the level is always set.
  level_ = level == Isolation::kUnknown ? Isolation::kSerializable : level;
  return level_.load();
}

}  // namespace dblock::detail
