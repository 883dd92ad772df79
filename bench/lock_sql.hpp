// SPDX-License-Identifier: Apache-2.0
// The lock statements as dblock sends them: rendered from the dialect files (lib/src/sql/)
// through the same render path the strategies use, so the raw baseline can never drift from the
// library's SQL. Also the parameters, bound by name through the library's own Statement where the
// library does so.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/owner.hpp"
#include "dblock/table_names.hpp"
#include "sql/statement.hpp"

namespace dblock::bench {

struct LockSql {
  LockSql(Dialect dialect, const TableNames& tables);

  std::vector<Value> acquire_params(const std::string& key, const std::string& lease_id,
                                    const Owner& owner, std::int64_t ttl_ms) const;
  // `release_id`: random per release call, as UniqueKeyLock makes it ("r-" + random hex).
  std::vector<Value> release_params(const std::string& key, const Owner& owner, std::int64_t token,
                                    const std::string& release_id) const;

  Dialect dialect;
  detail::Statement acquire;
  std::string channel;
  detail::Statement release;
};

// The transactional strategies' statements: the row lock's try (and, on MySQL, the stamp that
// follows it) and the optimistic version read / create / compare-and-set, with the statements
// the drivers open and end a transaction with (lib/src/drivers/*/connection.cpp).
struct TransactionSql {
  TransactionSql(Dialect dialect, const TableNames& tables);

  // The row lock try's parameters (PostgreSQL: one statement that locks and stamps; MySQL:
  // the try, then row_lock_stamp), bound from one argument list as RowLock binds them.
  std::vector<Value> row_lock_try_params(const std::string& key, const Owner& owner) const;
  std::vector<Value> row_lock_stamp_params(const std::string& key, const Owner& owner) const;

  Dialect dialect;
  std::string begin, commit, rollback;
  detail::Statement row_lock_try, row_lock_stamp;  // row_lock_stamp empty on PostgreSQL
  // Bound with "key" (version_cas also "version", the version read).
  detail::Statement version_read, version_create, version_cas;
};

// The slots an acquire may take (lib/src/semaphore/permits.hpp, PermitSlots): `first` to `last`
// (and below the key's limit), none while slot `blocked_by` (unless negative) holds a live
// permit. A Semaphore of n permits takes {0, n - 1, -1}; a ReadWriteLock of m readers takes
// {1, m, 0} for a reader and {0, 0, -1} for the writer.
struct SlotRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t blocked_by = -1;
};

// The semaphore's statements (lib/src/semaphore/semaphore.cpp): PostgreSQL takes a permit in one
// statement (acquire: the server picks a free slot of the range); MySQL reads the key's slots
// (slots), and the client picks a free one of the range and takes it (acquire_slot). release
// gives the permit back; live_in_shared and live_in_exclusive count a key's live permits in a
// range of slots, their rows locked (what the reader-writer lock asks after taking one). All bound
// from one argument list, as Semaphore binds them.
struct PermitSql {
  PermitSql(Dialect dialect, const TableNames& tables);

  // acquire, slots and acquire_slot (`slot` is used by acquire_slot alone); `permits` is the
  // key's limit, `range` the slots this acquire may take; no metadata.
  std::vector<Value> acquire_params(const detail::Statement& statement, const std::string& key,
                                    std::int64_t permits, const SlotRange& range,
                                    const std::string& lease_id, const Owner& owner,
                                    std::int64_t ttl_ms, std::int64_t slot = 0) const;
  // `release_id`: random per release call, as Semaphore makes it ("r-" + random hex).
  std::vector<Value> release_params(const std::string& key, const Owner& owner, std::int64_t token,
                                    const std::string& lease_id,
                                    const std::string& release_id) const;
  // live_in_shared and live_in_exclusive: the live permits of `key` in slots `first` to `last`.
  std::vector<Value> live_in_params(const std::string& key, std::int64_t first,
                                    std::int64_t last) const;

  Dialect dialect;
  detail::Statement acquire;              // empty on MySQL
  detail::Statement slots, acquire_slot;  // empty on PostgreSQL
  detail::Statement release;
  // The reader-writer lock's reader and writer checks.
  detail::Statement live_in_shared, live_in_exclusive;
  // What a release NOTIFYs (PostgreSQL): none, as a Semaphore's by default (notify off).
  std::string channel;
};

// "prefix" + 32 random hex digits: a fresh key for an uncontended acquisition.
std::string random_key(const std::string& prefix);

}  // namespace dblock::bench
