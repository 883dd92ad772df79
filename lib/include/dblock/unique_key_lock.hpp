// SPDX-License-Identifier: Apache-2.0
/// @file
/// UniqueKeyLock, the default strategy: one row per key in \<prefix>locks, taken by one INSERT when
/// the key is free or expired, on autocommit connections of its own source (never inside a
/// caller's transaction). Leases have a TTL on the database clock, background renewal, owner- and
/// token-checked release and renew, reentrancy per owner, and fencing tokens that strictly
/// increase per key. Waiters poll with backoff, are handed the key by releases through the same
/// lock object and, on PostgreSQL, are woken by LISTEN/NOTIFY; with `fair`, keys go to waiters in
/// order of arrival. claim() takes a key for good (idempotency keys).
///
/// Deadlocks and serialization failures during an acquire are retried, then reported as "not
/// acquired", never thrown. An acquire or release whose connection is lost is retried once and
/// recognises an attempt the server applied; when the retry's reply is lost too, acquire throws
/// Error(kConnectionLost) (the server may have granted the key: the owner's next acquire of it
/// re-enters that hold, and releasing it frees the key).
///
/// @code
///   dblock::UniqueKeyLock locks(*pool);  // or (*pool, {.fair = true}): turns in order of arrival
///   if (auto lease = locks.acquire("asset:42", 10s)) {  // waits up to 10 s
///     move_asset(42, lease->fencing_token());           // fence your writes with the token
///   }                                                   // released here
///   if (!locks.claim("order:user-9:voucher-7")) return;  // claimed already: never twice
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
/// outlive this object and every lease it returned.
///
/// Explained in docs/locks/unique-key.md (hand-over and fair waiting: docs/internals/waiting.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dblock/backoff.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct UniqueKeyLockOptions {
  TableNames tables{};
  BackoffPolicy backoff{};
  /// Wake waiters when a key is released: a release through this lock object hands the key to
  /// its waiter that has waited longest (both servers; for a fair lock, to the queue's head only),
  /// and on PostgreSQL waiters also sleep on LISTEN/NOTIFY for releases made elsewhere (polling
  /// only, when the source cannot open a dedicated connection, e.g. a pool opened from a URL with
  /// ?pool_mode=transaction, or the driver cannot wait for notifications). false: waiters poll.
  bool notify = true;
  /// Attempts for one try when the server reports a deadlock or serialization failure.
  int contention_retries = 3;
  /// Relaxed durability, for locks used only for efficiency (avoiding duplicate work), never for
  /// correctness. Off by default. PostgreSQL: acquire, release and renew commit with
  /// synchronous_commit = off, for each statement's own transaction only, so a server crash can
  /// lose the last few hundred milliseconds of acknowledged lock changes: a released lock can
  /// reappear until its TTL ends, a granted one can vanish (a second client may acquire it), and
  /// a fencing token can be handed out again. Claims always commit durably. MySQL/MariaDB: no
  /// effect. Explained in docs/locks/unique-key.md ("Relaxed durability").
  bool relaxed_durability = false;
  /// Fair waiting: keys go to waiters in order of arrival (docs/locks/fair-waiting.md).
  bool fair = false;
  /// How long a fair waiter's place outlives the waiter's last refresh (from 300 ms to 1 hour):
  /// a waiter that died holds up the ones behind it for at most this long.
  std::chrono::milliseconds waiter_ttl{5000};
};

struct ClaimOptions {
  /// Identifies this claim attempt: retrying with the same id after a lost reply reports the
  /// claim as ours. Empty: a random id.
  std::string claim_id{};
  /// JSON text stored with the claim, as LockOptions::metadata; empty for none.
  std::string metadata{};
  std::optional<Owner> owner{};
};

struct Claim {
  std::string key;
  std::int64_t fencing_token = 0;
  std::string claim_id;
};

namespace detail {
struct UniqueKeyLockCore;  // what the lock object and its leases share (lib/src)
class Candidacy;           // an election candidate's registration for hand-offs (lib/src)
}  // namespace detail

class DBLOCK_EXPORT UniqueKeyLock final : public Lock {
 public:
  explicit UniqueKeyLock(ConnectionSource& source, UniqueKeyLockOptions options = {});
  ~UniqueKeyLock() override;

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;
  /// With `notify` (UniqueKeyLockOptions): releases through this lock object, and on PostgreSQL
  /// releases anywhere, wake the watch as they wake a waiter asleep in acquire().
  std::unique_ptr<ReleaseWatch> watch_releases(std::string_view key,
                                               std::function<void()> wake) override;

  /// Takes `key` for good. Returns the claim, or nothing when the key is already claimed (or held
  /// as a lock) by someone else.
  std::optional<Claim> claim(std::string_view key, const ClaimOptions& options = {});

 private:
  friend class detail::Candidacy;
  std::shared_ptr<detail::UniqueKeyLockCore> impl_;
};

}  // namespace dblock
