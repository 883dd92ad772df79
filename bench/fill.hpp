// SPDX-License-Identifier: Apache-2.0
// Filling a lock table fast with many rows, in statements of up to a million rows each, from a
// row generator in the server: generate_series on PostgreSQL; MariaDB's SEQUENCE engine
// (seq_0_to_999999), or on MySQL a cross join of a ten-row derived table.
//
// A bulk fill drops the expires_at index first and builds it again at the end (one sort instead
// of a random index insert per row), leaving the table's schema exactly as the migration made it.
//
// Thread-safety: uses the connection it is given (one thread at a time).
#pragma once

#include <cstdint>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"
#include "dblock/url.hpp"

namespace dblock::bench {

// Inserts rows keyed stem + zero-padded n for n in [first, first + count), held by another
// owner, expiring `expires_in_seconds` from now on the database clock (negative: expired).
// Returns the seconds it took, index rebuild included.
// Bulk fills also open a second connection to `url`, writing on both at once.
double fill_lock_rows(const DatabaseUrl& url, Connection& conn, const TableNames& tables,
                      const std::string& stem, std::int64_t first, std::int64_t count,
                      std::int64_t expires_in_seconds);

}  // namespace dblock::bench
