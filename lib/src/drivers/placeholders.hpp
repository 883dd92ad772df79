// SPDX-License-Identifier: Apache-2.0
// Placeholders for drivers that name them: the $n (PostgreSQL) and ? (MySQL) of dblock's
// statements rewritten to SOCI's :name form, and the number of parameters a statement takes.
// Internal; not installed.
//
//   std::size_t n = 0;
//   std::string sql = detail::to_named_placeholders("SELECT $1, '$2'", Dialect::kPostgreSQL, &n);
//   // sql == "SELECT :p1, '$2'", n == 1
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "dblock/dialect.hpp"

// Called across dblock's own libraries (the drivers): exported from a shared build like the
// public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// Rewrites $1.. (PostgreSQL) or ? (MySQL) placeholders to :p1.. for drivers with named
// placeholders, leaving quoted strings, quoted identifiers and comments untouched. When
// `placeholders` is given, it receives how many parameters the statement takes: the number of ?
// (MySQL) or the highest $n (PostgreSQL).
std::string to_named_placeholders(std::string_view sql, Dialect dialect,
                                  std::size_t* placeholders = nullptr);

}  // namespace dblock::detail

#pragma GCC visibility pop
