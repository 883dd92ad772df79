// SPDX-License-Identifier: Apache-2.0
#include "sql_scanner.hpp"

namespace dblock::detail {

std::vector<std::string> split_statements(std::string_view sql, Dialect dialect) {
  std::vector<std::string> out;
  std::size_t start = 0;
  bool has_code = false;  // the current statement holds something besides space and comments
  auto flush = [&](std::size_t end) {
    if (has_code) {
      std::string_view s = sql.substr(start, end - start);
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
      out.emplace_back(s);
    }
    has_code = false;
  };
  for_each_code_char(sql, dialect, [&](std::size_t& i, bool in_code) {
    char c = sql[i];
    if (in_code && c == ';') {
      flush(i);
      start = i + 1;
      return;
    }
    if (in_code && !std::isspace(static_cast<unsigned char>(c))) has_code = true;
  });
  flush(sql.size());
  return out;
}

}  // namespace dblock::detail
