// SPDX-License-Identifier: Apache-2.0
/// @file
/// clean(): deletes dblock's rows long past expiry, in bounded batches, so a run never holds many
/// row locks at once, never floods replication, and never stalls acquirers. Only the database
/// clock decides: a row goes once its expires_at lies more than `grace` in the past, which each
/// batch's DELETE re-checks, so a lease renewed or re-acquired meanwhile survives. Claims are never
/// deleted. Several cleaners may run at once. `dblock clean` runs it from cron.
///
/// @code
///   dblock::CleanOptions options;
///   options.max_time = std::chrono::minutes(1);     // start no batch after a minute
///   options.pause = std::chrono::milliseconds(50);  // between batches, for replication
///   dblock::CleanResult done = dblock::clean(*conn, dblock::TableNames(), options);
///   if (!done.complete) log("budget ran out; the next run continues");
/// @endcode
///
/// Thread-safety: clean() uses the connection it is given (one thread at a time); run several
/// cleaners on several connections freely.
///
/// Explained in docs/operations/cleaner.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

/// Progress after each batch, for a progress display.
struct CleanProgress {
  std::uint64_t deleted = 0;  ///< so far, all tables
  std::uint64_t batches = 0;  ///< so far
};

struct CleanOptions {
  /// Rows per DELETE (at least 1).
  std::uint64_t batch_size = 1000;
  /// Rows stay this long past expires_at, so the server clock may step back by up to this much
  /// before a deleted key's next fencing token could fail to rise past its old ones
  /// (docs/operations/cleaner.md, "Grace"). Not negative.
  std::chrono::milliseconds grace = std::chrono::minutes(5);
  /// The history of holds (history.hpp) keeps a tenure this long after it ended; older rows are
  /// deleted, in batches like the rest. Not negative.
  std::chrono::milliseconds history_retention = std::chrono::hours(24 * 30);
  /// Stop after this many rows in all (0: no limit).
  std::uint64_t max_rows = 0;
  /// Start no new batch after this long (0: no limit). A batch already sent runs to its end.
  std::chrono::milliseconds max_time{0};
  /// Sleep between batches (0: none), to leave room for replication and other writers.
  std::chrono::milliseconds pause{0};
  /// Count what would go (bounded by max_rows) and delete nothing.
  bool dry_run = false;
  /// When set and true, stop before the next batch (checked during pauses too). Not owned.
  const std::atomic<bool>* stop = nullptr;
  /// Called after each batch (not in a dry run).
  std::function<void(const CleanProgress&)> on_batch{};
};

struct CleanResult {
  /// Rows deleted (in a dry run: rows that would be deleted), in all and per table by base
  /// name ("locks"). Every table the cleaner looks at has an entry, possibly 0.
  std::uint64_t deleted = 0;
  std::map<std::string, std::uint64_t> tables;
  /// DELETE statements sent (0 in a dry run).
  std::uint64_t batches = 0;
  std::chrono::milliseconds duration{0};
  /// The oldest expires_at still in the lock table that has passed (UTC, ISO 8601 with
  /// microseconds), after the run: rows inside the grace period or left by a budget. Empty when
  /// no expired row is left.
  std::optional<std::string> oldest_expiry_left;
  /// True when every row past the grace was removed (or counted); false when a budget
  /// (max_rows, max_time) or `stop` ended the run first.
  bool complete = true;
  bool dry_run = false;
};

/// Deletes (or, for dry_run, counts) expired rows in dblock's tables named by `tables`. The
/// connection must not be inside a transaction (Error(kInvalidArgument)): each batch commits on
/// its own. Throws dblock::Error: kUndefinedTable when the tables are missing (run `dblock
/// migrate up`), connection and access errors as classified by the driver. A deadlock or lock
/// wait timeout in one batch is retried a few times before it is thrown.
DBLOCK_EXPORT CleanResult clean(Connection& conn, const TableNames& tables = TableNames(),
                                const CleanOptions& options = CleanOptions());

}  // namespace dblock
