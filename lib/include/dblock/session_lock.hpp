// SPDX-License-Identifier: Apache-2.0
// The session lock: a native lock of the database server, held by the session of a connection
// the lease keeps until it is released. For locks that avoid duplicate work (efficiency), where a
// committed write per acquire and release (UniqueKeyLock, RowLock) costs more than it is worth.
//
//   dblock::SessionLock locks(*pool);
//   if (auto lease = locks.try_acquire("report:2024-06")) {  // one round trip
//     build_report(lease->fencing_token());
//   }                                                         // unlocked here, one round trip
//
// PostgreSQL: a session-level advisory lock (pg_try_advisory_lock; acquire with a timeout is one
// pg_advisory_lock statement bounded by lock_timeout, set for that statement only). The key maps
// to a bigint: the first 16 hex digits of SHA-256 over the schema, the table prefix and the key.
// Two keys whose hashes share those 64 bits share one lock: a collision only adds exclusion
// (the second key waits for the first), never lets two owners hold one key; at a million keys
// in use at once the chance of any collision is about 3 in 10^8.
// MySQL / MariaDB: GET_LOCK on the name "dblock_" + 40 hex digits of the same hash (GET_LOCK
// names are server-wide and at most 64 characters; a 255-character key fits). With no schema
// in TableNames, two databases of one MySQL server share a key's lock (added exclusion only).
// MariaDB bounds a wait to the millisecond in the statement; MySQL 8.0 reads GET_LOCK's timeout
// as whole seconds, so it waits the whole seconds and spends the rest trying again every 5 ms.
//
// Guarantees: two sessions never hold one key at once, while the lease's connection lives. A
// lease lasts until release() or until its session ends (the connection breaks, the server
// kills the session or restarts): the server then frees the lock at once, so another owner may
// take it; the lease reports lost() and release() throws Error(kLeaseLost). lost() needs no
// statement: it reads the socket, where the server's last message (PostgreSQL sends its
// "terminating connection" error before it frees the lock) or the closed connection shows up.
// A release whose reply is lost leaves the connection broken and is reported the same way: the
// server ends that session and with it the lock.
// A holder whose host vanishes is noticed as for RowLock (row_lock.hpp): on PostgreSQL the lease
// reports lost() within about 25 s and the server frees the lock within about 90 s; MySQL and
// MariaDB keep it until the server host's TCP keepalive or wait_timeout ends the session.
// What lost() cannot see: a session the server ends on its own (an administrator's kill, a
// failover) while the network between it and this host is down. The server frees the lock at
// once, another owner may take it, and this lease learns it only when its connection gives up
// (about 25 s; never behind a middlebox that keeps the TCP connection alive without passing
// anything). Writes that must not overlap check the fencing token.
// Leases have no TTL: LockOptions::ttl, auto_renew and on_lost are not used (nothing expires, so
// there is nothing to renew; renew() asks the connection whether it is alive), nor metadata.
//
// Fencing tokens come in the same round trip as the lock, without a table write, and increase
// strictly over every acquisition of every key (global, not per key): PostgreSQL takes them
// from the row_lock_tokens sequence (migration 0004; the one table object this strategy needs);
// MySQL and MariaDB from UUID_SHORT(), which increases strictly within a server run and across
// restarts as long as the server clock does not step back and fewer than 2^24 tokens per second
// of uptime were taken; server_id must be below 128 (its top byte leads the token). A token of a
// lease whose session died is never handed out again.
//
// Reentrant per owner: the same Owner acquiring a key it holds (in this process, through this
// SessionLock) gets a second lease on the same hold and session; the lock is freed when the
// outermost lease is released.
//
// Where session locks do not hold, they are refused with Error(kFailedPrecondition) before
// anything is locked: a source behind a transaction pooler, by the constructor (a pool opened
// with ?pool_mode=transaction, PoolOptions::dedicated_sessions = false: the pooler may run the
// unlock on another server session, and the lock would stay behind on one it hands to someone
// else), and a Galera cluster, by the first acquire (GET_LOCK is local to one node: clients on
// two nodes both get the lock).
// Use UniqueKeyLock there. `dblock locks` cannot list session locks: the server knows them only
// by their hash (pg_locks shows the bigint, performance_schema.metadata_locks the hashed name),
// not by key or owner.
//
// Each lease (and each waiter) occupies one connection of the source for its whole life; the
// source's size bounds how many keys a process holds or waits for at once. One connection holds
// at most one key, so a failed attempt frees every session lock of its connection before giving
// it back.
//
// Thread-safety: all methods may be called from many threads at once. A lease is used by one
// thread at a time. Reentrant leases of one owner share one connection and may each be used by a
// thread of its own: their statements (renew, the last release) take turns on it, and lost() on
// one is not misled by the reply to another's statement. The ConnectionSource must outlive this
// object and every lease it returned.
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
  // The schema and prefix go into each lock's hash (so two applications with different prefixes
  // on one server never share a lock), and name the token sequence on PostgreSQL.
  TableNames tables{};
};

class DBLOCK_EXPORT SessionLock final : public Lock {
 public:
  // Throws Error(kFailedPrecondition) for a source behind a transaction pooler
  // (ConnectionSource::keeps_sessions() false).
  explicit SessionLock(ConnectionSource& source, SessionLockOptions options = {});
  ~SessionLock() override;

  // One round trip on a connection of the source (plus, the first time on MySQL, one asking
  // whether the server is a Galera node). Throws Error(kFailedPrecondition) on a Galera node.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  // Waits in the server, up to `timeout`, for the lock; nothing when it is still held then.
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dblock
