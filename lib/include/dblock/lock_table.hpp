// SPDX-License-Identifier: Apache-2.0
/// @file
/// The lock table for operators: who holds what (`dblock locks`), and freeing a stuck lock
/// (`dblock release`).
///
/// Thread-safety: the function uses the connection it is given (one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct LockRow {
  std::string key;
  std::string lease_id;
  std::string owner_host;
  std::string owner_process;
  std::string owner_thread;
  std::int64_t hold_count = 0;
  std::int64_t fencing_token = 0;
  std::string acquired_at;  ///< UTC, ISO 8601 with microseconds
  std::string expires_at;   ///< UTC, ISO 8601, or "never" for claims
  bool expired = false;     ///< by the database clock, now
  std::string metadata;     ///< JSON text, empty when none
};

/// Every row that is held, or expired and not yet cleaned (released rows are left out), ordered
/// by key. A row released before its LockOptions::min_hold ran out is listed too, with hold_count
/// 0, until it expires: the key stays taken by no one until then.
DBLOCK_EXPORT std::vector<LockRow> list_locks(Connection& conn,
                                              const TableNames& tables = TableNames());

/// The rows list_locks returns whose key starts with `key_prefix` (compared byte for byte; no
/// character is a wildcard).
DBLOCK_EXPORT std::vector<LockRow> list_locks(Connection& conn, const TableNames& tables,
                                              std::string_view key_prefix);

/// The row list_locks would list for exactly `key`, read by the key's index: nothing when the key
/// is free (released, never taken, or cleaned).
DBLOCK_EXPORT std::optional<LockRow> find_lock(Connection& conn, const TableNames& tables,
                                               std::string_view key);

/// How many live fair waiters (UniqueKeyLockOptions::fair) are queued for each key that has any.
/// Needs the lock_waiters table (migration 5).
DBLOCK_EXPORT std::map<std::string, std::int64_t> queued_waiters(
    Connection& conn, const TableNames& tables = TableNames());

/// The live fair waiters queued for one key, and the head of its queue: the waiter a release
/// hands the key to next.
struct WaiterQueue {
  std::string key;
  std::int64_t waiters = 0;
  std::string head_host;
  std::string head_process;
  std::string head_thread;
  std::string head_since;  ///< when the head joined the queue: UTC, ISO 8601 with microseconds
};

/// The keys with live fair waiters whose key starts with `key_prefix` ("" for every key; byte
/// for byte, as list_locks compares), ordered by key. Needs the lock_waiters table (migration 5).
DBLOCK_EXPORT std::vector<WaiterQueue> list_waiter_queues(Connection& conn,
                                                          const TableNames& tables,
                                                          std::string_view key_prefix = "");

/// The database clock now, UTC, ISO 8601 with microseconds: the clock LockRow::expired and every
/// expiry are read against, so the time left before an expiry is expires_at minus this.
DBLOCK_EXPORT std::string database_now(Connection& conn);

/// A permit of a counting semaphore (semaphore.hpp), held or expired and not yet cleaned.
/// hold_count is always 1 (permits are not reentrant).
struct PermitRow {
  LockRow lock;
  std::int64_t slot = 0;     ///< 0 to permits - 1 (or past it, after the limit was lowered)
  std::int64_t permits = 0;  ///< the key's stored limit
};

/// Every permit held, or expired and not yet cleaned (released ones are left out, but for those
/// kept taken by a min_hold, listed with hold_count 0 until they expire), ordered by key and slot.
/// Needs the semaphore tables (migration 6).
DBLOCK_EXPORT std::vector<PermitRow> list_permits(Connection& conn,
                                                  const TableNames& tables = TableNames());

/// The permits list_permits returns whose key starts with `key_prefix` (byte for byte, as
/// list_locks compares).
DBLOCK_EXPORT std::vector<PermitRow> list_permits(Connection& conn, const TableNames& tables,
                                                  std::string_view key_prefix);

/// An operator's release: frees `row.key` as its holder's last release would (hold count 0,
/// expires now, waiters on PostgreSQL notified), keeping its fencing token so the next holder's
/// is higher, but only while the row still carries row.lease_id and row.fencing_token (as a
/// list_locks call read them). Returns false when it changed meanwhile (released, renewed into a
/// new lease, taken over): nothing was done; read it again. The holder finds its lease lost at
/// its next renewal or release.
DBLOCK_EXPORT bool release_lock_row(Connection& conn, const TableNames& tables, const LockRow& row);

/// An operator's release of one semaphore permit: frees `permit` as its holder's release would
/// (the slot is free at once; the fencing token stays, so the next holder's is higher), but only
/// while it still carries the lease id and token a list_permits call read, and only while it is
/// live (expired permits are free already). Returns false when nothing was freed. The holder
/// finds its permit lost at its next renewal or release.
DBLOCK_EXPORT bool release_permit_row(Connection& conn, const TableNames& tables,
                                      const PermitRow& permit);

}  // namespace dblock
