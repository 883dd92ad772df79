// SPDX-License-Identifier: Apache-2.0
// What every lock kind whose leases expire on the database clock (unique-key leases, semaphore
// and reader-writer permits) shares: a new lease's checked description, the owner's statement
// arguments, a statement run on a pooled connection with the retries such a kind needs, the id a
// statement returns (in a row, or as LAST_INSERT_ID()), a granted lease's start, and its fence. A
// new TTL kind writes its statements (lib/src/sql/) and its LeaseCore's release and renew on top of
// these; docs/internals/architecture.md lists the files it adds. Internal.
//
//   LeaseInfo info = new_ttl_lease(key, options, "the lock TTL");
//   auto r = run_pooled(source, options.contention_retries, true, nullptr,
//                       [&](Connection& conn) { return conn.execute(sql, bind(args)); });
//   if (!r) throw kept_contending("renew of '" + info.key + "'", "the renewer tries again");
//   auto token = returned_id(*r, rows, "fencing_token");  // nullopt: held by another owner
//   if (token) return start_lease(core, sent, options);
//
// Thread-safety: every function may run on many threads at once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "boot_clock.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/error.hpp"
#include "dblock/lock.hpp"
#include "galera.hpp"
#include "lease_core.hpp"
#include "sql/by_server.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"

namespace dblock::detail {

// A new lease of `key` for `options` (its owner, or the calling thread), with a fresh lease id
// and no token yet. Throws Error(kInvalidArgument) for a bad key, TTL (named `ttl_what`),
// metadata, min_hold or lock_delay.
LeaseInfo new_ttl_lease(std::string_view key, const LockOptions& options,
                        std::string_view ttl_what);

// `rest` after the owner's three arguments (host, process, thread): the arguments of a statement
// that names its owner.
std::vector<Arg> owner_args(const Owner& owner, std::initializer_list<Arg> rest);

// The integer a statement returns: column `column` of its first row on servers whose statements
// return rows (`rows`), else LAST_INSERT_ID(). nullopt for no row, or a LAST_INSERT_ID() of 0.
std::optional<std::int64_t> returned_id(const Result& r, bool rows, std::string_view column);

// Error(kLockWaitTimeout) for a statement about `what` (e.g. "renew of 'key'") that met
// contention on every retry, with what the caller can do (`then`): no transaction of the
// caller's was rolled back.
Error kept_contending(const std::string& what, std::string_view then);

// The lease `core`, granted by a statement sent at `sent`: its lost() counts the TTL from then,
// and the renewer keeps it (options.auto_renew).
Lease start_lease(std::shared_ptr<LeaseCore> core, BootClock::time_point sent,
                  const LockOptions& options);

// Error(kLeaseLost) for a fence (dblock/fence.hpp) of a lease on `key` that is no longer held.
Error fence_lease_lost(const std::string& key);

// What send_fence checks of `conn` before sending anything.
void check_fence_connection(Connection& conn, Dialect dialect, GaleraCheck& galera);

// Sends a TTL kind's fence statement (`which`, for `conn`'s server), bound from `args`, in
// `conn`'s open transaction. Throws Error(kInvalidArgument) when `conn` speaks another dialect
// than the lock's table (`dialect`), Error(kFailedPrecondition) on a Galera node (asked once per
// `galera`), and fence_lease_lost(key) when no row matched.
template <class Statements>
void send_fence(Connection& conn, const ByServer<Statements>& statements,
                Statement Statements::*which, Dialect dialect, GaleraCheck& galera,
                std::span<const Arg> args, const std::string& key) {
  check_fence_connection(conn, dialect, galera);
  const Statement& fence = statements[conn.server()].*which;
  if (conn.execute(fence.sql(), fence.bind(args)).empty()) throw fence_lease_lost(key);
}

// Runs `fn(conn)` on a connection from `source` and returns what it returns. Contention
// (deadlock, serialization failure, lock wait timeout) is retried `contention_retries` times,
// after a short random pause, and then reported as nullopt. A lost connection is retried once
// when `idempotent` (the statements are safe to send again). A renewal passes its lease
// (`renewing`): its connection's socket is published for a release to cut (LeaseCore::RenewingOn),
// and nothing is retried once the lease is released.
template <class Fn>
auto run_pooled(ConnectionSource& source, int contention_retries, bool idempotent,
                LeaseCore* renewing, Fn&& fn)
    -> std::optional<std::invoke_result_t<Fn&, Connection&>> {
  bool retried_lost = false;
  for (int attempt = 0;; ++attempt) {
    if (renewing != nullptr && renewing->released()) {
      throw Error(ErrorCode::kConnectionLost, "the lease was released during its renewal");
    }
    try {
      PooledConnection conn = source.acquire();
      if (renewing != nullptr) {
        // Declared after conn, so the socket is withdrawn before the connection goes back.
        LeaseCore::RenewingOn published(*renewing, conn->native_socket());
        return fn(*conn);
      }
      return fn(*conn);
    } catch (const Error& e) {
      if (is_write_contention(e.code())) {
        if (attempt >= contention_retries) return std::nullopt;
        pause_after_contention(attempt);
        continue;
      }
      if (e.code() == ErrorCode::kConnectionLost && idempotent && !retried_lost) {
        retried_lost = true;
        continue;
      }
      throw;
    }
  }
}

}  // namespace dblock::detail
