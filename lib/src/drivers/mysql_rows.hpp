// SPDX-License-Identifier: Apache-2.0
// The rows of a stored MySQL result as dblock's Result holds them, for the drivers that read a
// MYSQL_RES (libmysqlclient, and SOCI's MySQL backend). Header-only: each driver target compiles
// it against its own client headers. Internal.
//
//   std::vector<Result::Row> rows = detail::mysql_fetch_all(res, mysql_num_fields(res));
//
// Thread-safety: reads the result it is given; one thread at a time per connection.
#pragma once

#include <mysql.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"

namespace dblock::detail {

// Every row of `res` from the current one on, `width` columns each as text (NULL as an empty
// optional).
inline std::vector<Result::Row> mysql_fetch_all(MYSQL_RES* res, unsigned int width) {
  std::vector<Result::Row> rows;
  rows.reserve(static_cast<std::size_t>(mysql_num_rows(res)));
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    const unsigned long* lengths = mysql_fetch_lengths(res);
    Result::Row& out = rows.emplace_back();
    out.reserve(width);
    for (unsigned int c = 0; c < width; ++c) {
      if (row[c] == nullptr) {
        out.emplace_back();
      } else {
        out.emplace_back(std::in_place, row[c], static_cast<std::size_t>(lengths[c]));
      }
    }
  }
  return rows;
}

}  // namespace dblock::detail
