// SPDX-License-Identifier: Apache-2.0
/// @file
/// SessionLock: the database server's native lock (a session-level advisory lock on PostgreSQL,
/// GET_LOCK on MySQL and MariaDB), held by the session of a connection the lease keeps until it
/// is released. No table row is written: an acquire and a release cost one round trip each. For
/// locks that avoid duplicate work: not durable, no TTL, not listed by `dblock locks`. Two
/// sessions never hold one key at once while the lease's connection lives; when the session ends
/// (the connection breaks, the server kills the session or restarts) the server frees the lock at
/// once, the lease reports lost() and release() throws Error(kLeaseLost). Fencing tokens strictly
/// increase over every key: writes that must not overlap check them. Reentrant per owner through
/// one SessionLock. LockOptions::ttl, auto_renew, on_lost and metadata are not used. Each lease
/// (and each waiter) keeps one connection of the source for its whole life.
///
/// @code
///   dblock::SessionLock locks(*pool);
///   if (auto lease = locks.try_acquire("report:2024-06")) {  // one round trip
///     build_report(lease->fencing_token());
///   }                                                         // unlocked here, one round trip
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. A lease is used by one
/// thread at a time. Reentrant leases of one owner share one connection and may each be used by a
/// thread of its own: their statements (renew, the last release) take turns on it, and lost() on
/// one is not misled by the reply to another's statement. The ConnectionSource must outlive this
/// object and every lease it returned.
///
/// A transaction that must commit only while the lock is held runs on the lease's own connection,
/// borrowed with SessionConnection: the session that holds the lock is the one that commits, so
/// a session that ended (and freed the lock) cannot commit either (docs/locks/fencing.md).
///
/// Explained in docs/locks/session-lock.md (a vanished holder: docs/connections.md).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct SessionLockOptions {
  /// The schema and prefix go into each lock's hash (so two applications with different prefixes
  /// on one server never share a lock), and name the token sequence on PostgreSQL.
  TableNames tables{};
};

namespace detail {
struct SessionLockCore;  // what the lock object and its leases share (lib/src)
}  // namespace detail

class DBLOCK_EXPORT SessionLock final : public Lock {
 public:
  /// Throws Error(kFailedPrecondition) for a source behind a transaction pooler
  /// (ConnectionSource::keeps_sessions() false).
  explicit SessionLock(ConnectionSource& source, SessionLockOptions options = {});
  ~SessionLock() override;

  /// One round trip on a connection of the source (plus, the first time on MySQL, one asking
  /// whether the server is a Galera node). Throws Error(kFailedPrecondition) on a Galera node.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  /// Waits in the server, up to `timeout`, for the lock; nothing when it is still held then.
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

 private:
  std::shared_ptr<detail::SessionLockCore> impl_;
};

/// The connection of a SessionLock lease, borrowed for a transaction that commits only while the
/// lock is held: the session that holds the lock runs the transaction, and a session that ended
/// (killed, its connection broken: the server then frees the lock) cannot commit. fence() accepts
/// the lease with this connection and sends nothing; it refuses any other connection.
///
/// @code
///   auto lease = locks.acquire("ledger", 5s);
///   dblock::SessionConnection conn(*lease);  // the lease's own connection, for this scope
///   conn->begin();
///   dblock::fence(*lease, *conn);            // checks the session; no statement
///   conn->execute("UPDATE ledger SET ...");
///   conn->commit();                          // fails if the session (and the lock) ended
/// @endcode
///
/// While it lives, the lease's own statements on the connection (renew(), the release of the
/// last reentrant lease) wait for it on other threads. On its own thread, renew() sends nothing
/// and a release is carried out when the SessionConnection ends; a new acquire of the key by
/// the same owner there would wait for itself, so release and acquire again after the borrow.
/// The destructor rolls back a transaction left open (never throws).
///
/// Thread-safety: made, used and destroyed on one thread (it holds the connection's turn, which
/// other threads wait for); neither copyable nor movable.
class DBLOCK_EXPORT SessionConnection {
 public:
  /// Borrows `lease`'s connection, first waiting for a statement of the lease in flight on
  /// another thread. Throws Error(kInvalidArgument) for an empty lease or one of another lock
  /// kind, Error(kLeaseLost) when the lease's session already ended, Error(kFailedPrecondition)
  /// when this thread borrows it already.
  explicit SessionConnection(const Lease& lease);
  ~SessionConnection();
  SessionConnection(const SessionConnection&) = delete;
  SessionConnection& operator=(const SessionConnection&) = delete;

  Connection& operator*() const noexcept;
  Connection* operator->() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dblock
