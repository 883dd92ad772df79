// SPDX-License-Identifier: Apache-2.0
// Placeholders rewritten for drivers that name them (drivers/placeholders.hpp), by the SQL
// scanner, so quoted text and comments keep their $ and ?.
//
// Thread-safety: a pure function.
#include "drivers/placeholders.hpp"

#include <algorithm>
#include <cctype>

#include "sql_scanner.hpp"

namespace dblock::detail {

std::string to_named_placeholders(std::string_view sql, Dialect dialect,
                                  std::size_t* placeholders) {
  std::string out;
  out.reserve(sql.size() + 16);
  std::size_t next = 1;
  std::size_t highest = 0;
  for_each_code_char(sql, dialect, [&](std::size_t& i, bool in_code) {
    char c = sql[i];
    if (in_code && dialect == Dialect::kMySQL && c == '?') {
      highest = next;
      out += ":p" + std::to_string(next++);
      return;
    }
    if (in_code && dialect == Dialect::kPostgreSQL && c == '$' && i + 1 < sql.size() &&
        std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      out += ":p";
      std::size_t number = 0;
      while (i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
        out += sql[++i];
        number = std::min<std::size_t>(number * 10 + static_cast<std::size_t>(sql[i] - '0'),
                                       std::size_t{1} << 20);
      }
      highest = std::max(highest, number);
      return;
    }
    out += c;
  });
  if (placeholders != nullptr) *placeholders = highest;
  return out;
}

}  // namespace dblock::detail
