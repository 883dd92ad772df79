// SPDX-License-Identifier: Apache-2.0
// A libpq result as a dblock::Result: shared by the libpq driver and the SOCI driver's
// PostgreSQL sessions. Internal; header-only so that either driver target can use it without
// linking the other.
//
// Thread-safety: reads only the result it is given.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"

namespace dblock::libpq_driver {

// Every column name and cell of `r` as text (NULL as an empty optional), with `affected_rows`.
inline Result to_result(const PGresult* r, std::uint64_t affected_rows) {
  const int width = PQnfields(r);
  const int height = PQntuples(r);
  std::vector<std::string> columns;
  columns.reserve(static_cast<std::size_t>(width));
  for (int c = 0; c < width; ++c) columns.emplace_back(PQfname(r, c));
  std::vector<Result::Row> rows(static_cast<std::size_t>(height));
  for (int i = 0; i < height; ++i) {
    Result::Row& row = rows[static_cast<std::size_t>(i)];
    row.reserve(static_cast<std::size_t>(width));
    for (int c = 0; c < width; ++c) {
      if (PQgetisnull(r, i, c)) {
        row.emplace_back();
      } else {
        row.emplace_back(std::in_place, PQgetvalue(r, i, c),
                         static_cast<std::size_t>(PQgetlength(r, i, c)));
      }
    }
  }
  return Result(std::move(columns), std::move(rows), affected_rows);
}

}  // namespace dblock::libpq_driver
