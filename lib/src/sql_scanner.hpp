// SPDX-License-Identifier: Apache-2.0
// A small SQL lexer that knows where quoted strings, quoted identifiers and comments are, so
// placeholder rewriting and statement splitting never touch their contents. Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/dialect.hpp"

namespace dblock::detail {

// Calls fn(i, in_code) for each index i of sql, in order. in_code is false inside strings,
// quoted identifiers and comments (their delimiters included). When in_code is true, fn may
// advance i to consume further characters; scanning resumes after the new i.
template <class Fn>
void for_each_code_char(std::string_view sql, Dialect dialect, Fn&& fn) {
  const bool mysql = dialect == Dialect::kMySQL;
  std::size_t i = 0;
  const std::size_t n = sql.size();
  auto quoted_run = [&](char close, bool backslash_escapes) {
    fn(i, false);  // opening quote
    ++i;
    while (i < n) {
      char c = sql[i];
      if (backslash_escapes && c == '\\' && i + 1 < n) {
        fn(i, false);
        ++i;
      } else if (c == close) {
        if (i + 1 < n && sql[i + 1] == close) {  // doubled quote
          fn(i, false);
          ++i;
        } else {
          fn(i, false);
          ++i;
          return;
        }
      }
      fn(i, false);
      ++i;
    }
  };
  while (i < n) {
    char c = sql[i];
    char next = i + 1 < n ? sql[i + 1] : '\0';
    if (c == '\'') {
      quoted_run('\'', mysql);
    } else if (c == '"') {
      quoted_run('"', mysql);
    } else if (c == '`' && mysql) {
      quoted_run('`', false);
    } else if ((c == '-' && next == '-') || (c == '#' && mysql)) {
      while (i < n && sql[i] != '\n') fn(i, false), ++i;
    } else if (c == '/' && next == '*') {
      fn(i, false), ++i;
      fn(i, false), ++i;
      while (i < n && !(sql[i] == '*' && i + 1 < n && sql[i + 1] == '/')) fn(i, false), ++i;
      if (i < n) fn(i, false), ++i, fn(i, false), ++i;
    } else if (c == '$' && !mysql &&
               (next == '$' || std::isalpha(static_cast<unsigned char>(next)) || next == '_')) {
      // Possible dollar quote: $tag$ ... $tag$
      std::size_t j = i + 1;
      while (j < n && (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_')) ++j;
      if (j < n && sql[j] == '$') {
        std::string_view tag = sql.substr(i, j - i + 1);
        std::size_t end = sql.find(tag, j + 1);
        std::size_t stop = end == std::string_view::npos ? n : end + tag.size();
        while (i < stop) fn(i, false), ++i;
      } else {
        fn(i, true);
        ++i;
      }
    } else {
      fn(i, true);
      ++i;
    }
  }
}

// Splits a script into statements at top-level semicolons; drops empty statements and
// statements that are only comments. Each statement is returned without its semicolon.
std::vector<std::string> split_statements(std::string_view sql, Dialect dialect);

}  // namespace dblock::detail
