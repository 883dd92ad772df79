// SPDX-License-Identifier: Apache-2.0
// What the SOCI driver reads off the native result under SOCI's MySQL backend: the rows of a
// statement SOCI ran without into elements (see connection.cpp for why). The backend runs each
// statement with mysql_real_query and keeps the whole result (mysql_store_result), so the rows
// are there as the server sent them, as text. Internal to the dblock_soci target; header-only.
//
// Thread-safety: reads the statement it is given; one thread at a time per session.
#pragma once

#include <soci/mysql/soci-mysql.h>
#include <soci/soci.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"
#include "drivers/mysql_rows.hpp"

namespace dblock::soci_driver {

// Every row of the statement's result set, each column as text (NULL as an empty optional),
// with the row count as the affected rows; nullopt when the statement returned no result set.
inline std::optional<Result> mysql_rows(soci::statement& st) {
  auto* backend = static_cast<soci::mysql_statement_backend*>(st.get_backend());
  MYSQL_RES* result = backend == nullptr ? nullptr : backend->result_;
  if (result == nullptr) return std::nullopt;
  const unsigned int width = mysql_num_fields(result);
  const MYSQL_FIELD* fields = mysql_fetch_fields(result);
  std::vector<std::string> columns;
  columns.reserve(width);
  for (unsigned int c = 0; c < width; ++c) columns.emplace_back(fields[c].name);
  mysql_data_seek(result, 0);  // SOCI has read through it once already
  std::vector<Result::Row> rows = detail::mysql_fetch_all(result, width);
  const std::size_t count = rows.size();
  return Result(std::move(columns), std::move(rows), count);
}

}  // namespace dblock::soci_driver
