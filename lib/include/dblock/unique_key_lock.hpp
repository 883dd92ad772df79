// SPDX-License-Identifier: Apache-2.0
// The unique-key lock: one row per key in <prefix>locks. Acquire is one INSERT that wins when
// the key is free (or expired), re-enters when the same owner holds it, and recognises a retry of
// an attempt whose reply was lost. Release and renew are one owner- and token-checked statement
// each. The lock runs on autocommit connections of its own source, never inside a caller's
// transaction.
//
// Waiting (acquire with a timeout) polls with exponential backoff and full jitter
// (backoff.hpp). With notify (the default), a release made through the waiter's own lock object
// hands the key straight to the waiter of that object that has waited longest: the release's one
// statement moves the row to the waiter, with a new fencing token and the waiter's TTL and
// metadata, so a handoff costs one commit instead of a release and an acquire, the key is never
// free in between, and a holder that asks again at once waits behind the waiters already asleep.
// Only a release that frees the key hands it over (not one of several reentrant holds, not one
// whose lease is gone), and a waiter with the releaser's own owner is passed over; a fair lock
// hands it only to the queue's head, when the head waits in the same lock object. After 16
// hand-overs of a key in a row, the next release frees it for everyone (waiters here learn of it
// as waiters elsewhere do), so waiters in other processes are not shut out; fair waiting is the
// way to serve them in turn. A waiter being handed the key waits for that statement's outcome
// even past its timeout, so acquire can return the lease that much late (one round trip, two
// when the connection is lost on the way: the releaser takes its connection before it picks the
// waiter) rather than leave the key with a waiter that gave up. While a lease of the same lock
// object holds the key, its waiters poll only at the backoff's slowest pace. On
// PostgreSQL, when the source can open a dedicated connection, waiters also sleep on LISTEN and
// the last release NOTIFYs, so waiters of other lock objects and other processes wake in about
// one round trip. Such a release wakes one waiter of the key per lock object; one made through
// the waiter's own lock object that does not hand over wakes it at commit.
//
// Fair waiting (UniqueKeyLockOptions::fair): a waiter takes a place in the key's queue (the
// lock_waiters table, in order of arrival) once its first try fails, and a free key goes only to
// the first live waiter, so keys are granted in the order waiters came, and a holder that asks
// again at once queues behind them instead of taking the key back. A place is a lease too: the
// waiter refreshes it while it waits (every third of waiter_ttl at most), and a waiter that died
// drops out when it expires (the cleaner deletes the row later); a registration sent again
// after a lost reply finds its own place instead of queueing twice; a waiter whose time runs out
// (or that gets the key) leaves the queue, and so does one whose acquire ends in an error, even
// when the error hid whether its place was taken (a lost reply). A try (try_acquire, or acquire
// with no time) does not queue: it takes a free key only while no live waiter is queued, and the
// owner's re-entry never waits for a turn. On PostgreSQL a release wakes the queue's head only, in
// whatever process it waits, and a release through the head's own lock object hands it the key (see
// above); a head that leaves while the key is free wakes the next waiter; and while the lock
// object's LISTEN is in place a waiter polls only every BackoffPolicy::max_delay (against a lease
// that ends by its TTL or a head that died, which nobody announces). Fairness holds among the fair
// lock objects of a key: a lock object without fair = true on the same table does not look at the
// queue and may take a free key before its head. A dead waiter at the head delays the key by at
// most waiter_ttl. Costs (bench, hot_key fair): a fair try that finds the key free is one statement
// on PostgreSQL, two on MySQL/MariaDB (a read of the queue first). On PostgreSQL a waiter's first
// refused try takes its place in the same statement, whose commit alone does not wait for its WAL
// flush (a place lost in a server crash is taken again, at the back, by the waiter's next refresh),
// and the acquire that gets the key deletes the place; on MySQL/MariaDB a waiter adds a
// registration and a leave. Both refresh the place while waiting. On MySQL/MariaDB, where no
// release wakes a waiter, the first three waiters poll every BackoffPolicy::min_sleep and the rest
// less often the further back they are.
//
// Deadlocks and serialization failures during an acquire storm (InnoDB takes next-key locks on
// duplicate-key inserts) are retried a few times and then reported as "not acquired", never
// thrown. A connection lost during acquire is retried once with the same lease id, so an insert
// the server applied is recognised as ours; a release is retried once with the same release id,
// written into the row's lease_id, so a decrement the server applied is not applied again. (The
// retry is exact as long as one owner's calls do not run concurrently, as with the default
// per-thread owner; a named owner shared by threads at once may see a retried release decrement
// a second hold.) When the retry's reply is lost too, the caller gets Error(kConnectionLost)
// and no lease although the server may have granted the key; the owner's next acquire of the
// key re-enters that hold, and releasing it frees the key, since this process then holds no
// other lease of that owner on the key.
//
// Claim-once: claim(key) takes a key for good (never expires, never released by dblock), for
// idempotency keys such as "one order per user and voucher".
//
// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
// outlive this object and every lease it returned.
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
  // Wake waiters when a key is released: a release through this lock object hands the key to
  // its waiter that has waited longest (both servers; for a fair lock, to the queue's head only),
  // and on PostgreSQL waiters also sleep on LISTEN/NOTIFY for releases made elsewhere (polling
  // only, when the source cannot open a dedicated connection, e.g. a pool opened from a URL with
  // ?pool_mode=transaction, or the driver cannot wait for notifications). false: waiters poll.
  bool notify = true;
  // Attempts for one try when the server reports a deadlock or serialization failure.
  int contention_retries = 3;
  // Relaxed durability, for locks used only for efficiency (avoiding duplicate work), never for
  // correctness. Off by default.
  //
  // PostgreSQL: acquire, release and renew commit with synchronous_commit = off, set for each
  // statement's own transaction only (no extra round trip; the session's setting is untouched),
  // so a commit no longer waits for its WAL flush. The risk: a server crash (not a client crash,
  // not a clean restart) can lose the last few hundred milliseconds of acknowledged lock
  // changes (up to 3 x wal_writer_delay). After such a crash a lock thought released can
  // reappear until its TTL ends, and a lock that was granted can vanish, so a second client can
  // acquire it while the first still believes it holds it, and a fencing token can be handed
  // out again. Claims (claim()) always commit durably. On a replica set-up,
  // synchronous_commit = off also stops waiting for synchronous standbys.
  //
  // MySQL/MariaDB: no effect. InnoDB's flush-at-commit setting (innodb_flush_log_at_trx_commit)
  // is global only and cannot be changed for one session or statement; set it on the server if
  // the whole server may trade durability for speed.
  bool relaxed_durability = false;
  // Fair waiting: keys go to waiters in order of arrival (see the top of this file).
  bool fair = false;
  // How long a fair waiter's place outlives the waiter's last refresh (from 300 ms to 1 hour):
  // a waiter that died holds up the ones behind it for at most this long.
  std::chrono::milliseconds waiter_ttl{5000};
};

struct ClaimOptions {
  // Identifies this claim attempt: retrying with the same id after a lost reply reports the
  // claim as ours. Empty: a random id.
  std::string claim_id{};
  // JSON text stored with the claim, as LockOptions::metadata; empty for none.
  std::string metadata{};
  std::optional<Owner> owner{};
};

struct Claim {
  std::string key;
  std::int64_t fencing_token = 0;
  std::string claim_id;
};

class DBLOCK_EXPORT UniqueKeyLock final : public Lock {
 public:
  explicit UniqueKeyLock(ConnectionSource& source, UniqueKeyLockOptions options = {});
  ~UniqueKeyLock() override;

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  // Takes `key` for good. Returns the claim, or nothing when the key is already claimed (or held
  // as a lock) by someone else.
  std::optional<Claim> claim(std::string_view key, const ClaimOptions& options = {});

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dblock
