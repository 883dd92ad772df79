// SPDX-License-Identifier: Apache-2.0
// Lock rows written straight into a lock table, for the cleaner's tests and volume check: many
// rows with chosen expiry times in one statement per thousand rows, on the database clock.
//
// Thread-safety: the functions use the connection they are given (one thread at a time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

// Inserts `count` free rows keyed stem + 1 ... stem + count whose expires_at is the server's
// now + `seconds_from_now` (negative: already expired), or never (a claim) when empty.
void insert_lock_rows(Connection& conn, const TableNames& tables, const std::string& stem,
                      std::uint64_t count, std::optional<std::int64_t> seconds_from_now);

// Rows in the lock table: all of them, or only those whose key starts with `stem`.
std::uint64_t count_lock_rows(Connection& conn, const TableNames& tables,
                              const std::string& stem = "");

}  // namespace dblock::testing
