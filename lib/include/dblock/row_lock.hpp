// SPDX-License-Identifier: Apache-2.0
/// @file
/// RowLock: SELECT ... FOR UPDATE on a row keyed by the lock key (in \<prefix>row_locks, created on
/// first use), held by a transaction on a connection the lease keeps. The critical section writes
/// through Lease::connection(), so its writes commit with release() and roll back when the lease
/// is dropped without it. try_acquire uses NOWAIT; acquire bounds the server's lock wait to the
/// timeout, and a wait that times out holds nothing. Waiters queue in the server, in its order.
/// If the connection dies, the server rolls back and frees the lock at once; the lease reports
/// lost() and release() throws Error(kLeaseLost); a COMMIT whose reply is lost throws
/// Error(kCommitInDoubt). No TTL (LockOptions::ttl, auto_renew and on_lost are not used; renew()
/// checks the connection). Reentrant per owner on one transaction. Each lease (and each waiter)
/// keeps one connection of the source for its whole life.
///
/// @code
///   dblock::RowLock locks(*pool);
///   dblock::with_lock(locks, "voucher:7", 5s, {}, [&](dblock::Lease& lease) {
///     lease.connection()->execute("UPDATE vouchers SET stock = stock - 1 WHERE id = $1", {7});
///   });  // commits: the lock ends and the UPDATE lands together
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. A lease and its
/// connection are used by one thread at a time. The ConnectionSource must outlive this object
/// and every lease it returned.
///
/// Explained in docs/locks/row-lock.md (a vanished holder: docs/connections.md).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct RowLockOptions {
  TableNames tables{};
  /// Attempts for one acquire when the server reports a deadlock or serialization failure.
  int contention_retries = 3;
  /// On a Galera cluster SELECT ... FOR UPDATE locks only the node it runs on: two clients on two
  /// nodes both get the lock, and one of them fails only at COMMIT. A RowLock therefore refuses a
  /// Galera connection (Error kFailedPrecondition) unless this declares that every client of
  /// these row locks writes through one node (a single-writer setup, e.g. a proxy that sends all
  /// writes to one node). The unique-key and optimistic strategies work across Galera nodes.
  bool galera_single_writer = false;
};

/// A row of the caller's own table, named by its primary key.
struct TableRow {
  std::string table;       ///< "orders", or "schema.orders"; each part a validated identifier
  std::string key_column;  ///< a validated identifier, the table's primary key
  Value key;               ///< the row's key value, bound as a parameter
};

namespace detail {
struct RowLockCore;  // what the lock object and its leases share (lib/src)
}  // namespace detail

class DBLOCK_EXPORT RowLock final : public Lock {
 public:
  explicit RowLock(ConnectionSource& source, RowLockOptions options = {});
  ~RowLock() override;

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  /// Locks an existing row of the caller's own table (by primary key, so InnoDB locks that one
  /// row). The lease's key reads "table.column=value" and its fencing token is 0 (the caller's
  /// table has no token column). Throws Error(kFailedPrecondition) when no such row exists and
  /// Error(kInvalidArgument) for an invalid table or column name.
  std::optional<Lease> try_acquire_row(const TableRow& row, const LockOptions& options = {});
  std::optional<Lease> acquire_row(const TableRow& row, std::chrono::milliseconds timeout,
                                   const LockOptions& options = {});

 private:
  std::shared_ptr<detail::RowLockCore> impl_;
};

}  // namespace dblock
