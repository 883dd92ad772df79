// Filling a lock table fast with many rows, in statements of up to a million rows each, from a
// row generator in the server: generate_series on PostgreSQL; on MySQL/MariaDB a cross join of
// a ten-row derived table (both servers accept it, no recursion limit applies).
//
// Thread-safety: uses the connection it is given (one thread at a time).
#pragma once

#include <cstdint>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::bench {

// Inserts rows keyed stem + zero-padded n for n in [first, first + count), held by another
// owner, expiring `expires_in_seconds` from now on the database clock (negative: expired).
// Returns the seconds it took.
double fill_lock_rows(Connection& conn, const TableNames& tables, const std::string& stem,
                      std::int64_t first, std::int64_t count, std::int64_t expires_in_seconds);

}  // namespace dblock::bench
