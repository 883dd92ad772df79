// SPDX-License-Identifier: Apache-2.0
/// @file
/// The history of holds (opt-in): one row per ended tenure of a unique-key lock (key, fencing
/// token, owner, when it was acquired and when it ended on the database clock, and how: released,
/// force-released by an operator, expired, taken over, or cleaned). Written by triggers on the
/// lock table in the same statement that ends the hold, so recording adds no statement and no
/// round trip; with history off no trigger exists and nothing is written. The table comes with
/// migration 0009; enable_history() creates the triggers, disable_history() drops them; the
/// cleaner prunes old rows.
///
/// @code
///   dblock::enable_history(*conn);  // once, as the role that applies migrations
///   for (const dblock::HistoryRow& row : dblock::read_history(*conn, dblock::TableNames(), "job"))
///     std::cout << row.fencing_token << ' ' << dblock::to_string(row.ended_how) << '\n';
/// @endcode
///
/// Thread-safety: the functions use the connection they are given (one thread at a time).
///
/// Explained in docs/operations/history.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

/// How a tenure (an acquisition and its re-entries, under one fencing token) ended.
enum class HoldEnd {
  kReleased,       ///< its holder released it (or handed the key straight to a waiter)
  kForceReleased,  ///< an operator released it (`dblock release`, release_lock_row())
  kExpired,        ///< its lease ran out, and its own owner took the key again
  kTakenOver,      ///< its lease ran out, and another owner took the key
  kCleaned,        ///< its lease ran out, and the cleaner deleted the row
};

/// "released", "force_released", "expired", "taken_over", "cleaned": the names the history
/// table stores.
DBLOCK_EXPORT std::string_view to_string(HoldEnd end) noexcept;

/// The HoldEnd named by `name` (as to_string() writes it); nothing for any other text.
DBLOCK_EXPORT std::optional<HoldEnd> hold_end_from_string(std::string_view name) noexcept;

/// One ended tenure.
struct HistoryRow {
  std::string key;
  std::int64_t fencing_token = 0;
  std::string owner_host;
  std::string owner_process;
  std::string owner_thread;
  std::string acquired_at;  ///< UTC, ISO 8601 with microseconds
  /// UTC, ISO 8601 with microseconds, on the database clock: when the release ran, or, for a
  /// lease that ran out (expired, taken over, cleaned), its expiry.
  std::string ended_at;
  HoldEnd ended_how = HoldEnd::kReleased;
};

/// Which rows read_history() returns.
struct HistoryQuery {
  /// Only tenures that ended within this long before the database clock's now (none: all).
  std::optional<std::chrono::milliseconds> since;
  /// At most this many rows, the newest (0: all).
  std::uint64_t limit = 0;
};

/// Creates the triggers that record ended holds of the lock table named by `tables` (idempotent:
/// an enabled history stays enabled, its triggers brought up to this version where the server's
/// DDL is transactional). Needs the history table (migration 0009): without it, throws
/// Error(kUndefinedTable) saying to run `dblock migrate up`. Needs the privileges of the role
/// that applies migrations (docs/operations/history.md); the triggers write with them.
DBLOCK_EXPORT void enable_history(Connection& conn, const TableNames& tables = TableNames());

/// Drops the triggers (idempotent): holds ending from then on are not recorded. The rows
/// recorded stay until the cleaner prunes them.
DBLOCK_EXPORT void disable_history(Connection& conn, const TableNames& tables = TableNames());

/// True when every trigger enable_history() creates is there.
DBLOCK_EXPORT bool history_enabled(Connection& conn, const TableNames& tables = TableNames());

/// The recorded tenures of `key`, newest first (by ended_at). Throws Error(kUndefinedTable) when
/// the history table is missing (run `dblock migrate up`), Error(kInvalidArgument) for a
/// negative `since`.
DBLOCK_EXPORT std::vector<HistoryRow> read_history(Connection& conn, const TableNames& tables,
                                                   std::string_view key,
                                                   const HistoryQuery& query = HistoryQuery());

}  // namespace dblock
