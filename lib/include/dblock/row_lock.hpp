// SPDX-License-Identifier: Apache-2.0
// The row lock: SELECT ... FOR UPDATE on a row keyed by the lock key, held by a transaction on a
// connection dedicated to the lease.
//
//   dblock::RowLock locks(*pool);
//   dblock::with_lock(locks, "voucher:7", 5s, {}, [&](dblock::Lease& lease) {
//     lease.connection()->execute("UPDATE vouchers SET stock = stock - 1 WHERE id = $1", {7});
//   });  // commits: the lock ends and the UPDATE lands together
//
// The key's row in <prefix>row_locks is created on first use (never locked while missing: in
// InnoDB that would take a gap lock), then locked in a new transaction: try_acquire with NOWAIT,
// acquire with the server's lock wait bounded to the timeout (PostgreSQL lock_timeout; MariaDB
// max_statement_time with WAIT n; MySQL 8 MAX_EXECUTION_TIME with innodb_lock_wait_timeout), so
// sub-second waits end on time. A wait that times out rolls its transaction back, so it holds
// nothing even if the grant raced the timeout. Each acquisition stamps the row with the holder
// and a fencing token (the same scheme as UniqueKeyLock).
//
// Fairness: waiters wait in the server's own lock queue for the row, and dblock adds none.
// PostgreSQL grants a row lock to its waiters in the order they came; InnoDB in that order on
// MariaDB, and on MySQL 8.0 by its contention-aware scheduling (CATS), which may put a waiter
// that blocks others first. A try (NOWAIT) never queues and may take a row just freed before a
// waiter does. For turns in order of arrival across every server, use UniqueKeyLock with fair.
//
// The lease owns the connection and its open transaction until it ends: Lease::connection() is
// where the critical section does its writes, so they commit atomically with the release.
// release() commits; a lease dropped without release() (an exception in the critical section)
// rolls back. If the connection dies, the server rolls the transaction back and frees the lock
// at once; the lease then reports lost() and release() throws Error(kLeaseLost). A session the
// server ended (pg_terminate_backend, an idle timeout) counts as lost as soon as PostgreSQL's
// FATAL error arrives, which it sends before it frees the lock, so lost() is already true when
// another owner gets the row (not behind TLS, where only the socket's close, a little later, is
// seen; nor on MySQL, which only closes). A connection
// lost while the COMMIT was on its way gives Error(kCommitInDoubt): the writes may or may not be
// in.
//
// A holder whose host vanishes (no FIN, no reset) is noticed by neither side until TCP gives
// up. Connections dblock opens give the server up after about 25 s, and on PostgreSQL ask the
// server to give the client up after 90 s (its TCP keepalive and user timeout, set for the
// session), so the lease reports lost() before the server frees the lock, and the lock is free
// again within about 90 s. MySQL and MariaDB have no such session setting: the server keeps the
// session, and the lock, until its TCP keepalive (two hours by default) or wait_timeout ends it
// (docs/connections.md, "Network timeouts"). A URL that sets libpq's keepalives or tcp_user_timeout
// keeps the server's own settings, which must then outlast the client's.
//
// Leases do not expire: the server holds a row lock until commit, rollback or disconnect.
// LockOptions::ttl, auto_renew and on_lost are not used; renew() checks that the connection is
// still alive. Reentrant: the same owner acquiring a key it holds gets a second lease on the
// same transaction (no second connection); the transaction commits when the outermost lease is
// released, and rolls back if any inner lease was dropped without release().
//
// Each lease (and each waiter) occupies one connection of the source for its whole life; the
// source's size bounds how many keys a process holds or waits for at once.
//
// Thread-safety: all methods may be called from many threads at once. A lease and its
// connection are used by one thread at a time. The ConnectionSource must outlive this object
// and every lease it returned.
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
  // Attempts for one acquire when the server reports a deadlock or serialization failure.
  int contention_retries = 3;
  // On a Galera cluster SELECT ... FOR UPDATE locks only the node it runs on: two clients on two
  // nodes both get the lock, and one of them fails only at COMMIT. A RowLock therefore refuses a
  // Galera connection (Error kFailedPrecondition) unless this declares that every client of
  // these row locks writes through one node (a single-writer setup, e.g. a proxy that sends all
  // writes to one node). The unique-key and optimistic strategies work across Galera nodes.
  bool galera_single_writer = false;
};

// A row of the caller's own table, named by its primary key.
struct TableRow {
  std::string table;       // "orders", or "schema.orders"; each part a validated identifier
  std::string key_column;  // a validated identifier, the table's primary key
  Value key;               // the row's key value, bound as a parameter
};

class DBLOCK_EXPORT RowLock final : public Lock {
 public:
  explicit RowLock(ConnectionSource& source, RowLockOptions options = {});
  ~RowLock() override;

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  // Locks an existing row of the caller's own table (by primary key, so InnoDB locks that one
  // row). The lease's key reads "table.column=value" and its fencing token is 0 (the caller's
  // table has no token column). Throws Error(kFailedPrecondition) when no such row exists and
  // Error(kInvalidArgument) for an invalid table or column name.
  std::optional<Lease> try_acquire_row(const TableRow& row, const LockOptions& options = {});
  std::optional<Lease> acquire_row(const TableRow& row, std::chrono::milliseconds timeout,
                                   const LockOptions& options = {});

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dblock
