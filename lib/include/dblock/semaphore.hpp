// SPDX-License-Identifier: Apache-2.0
// The counting semaphore: at most N owners hold a key at once ("at most 3 report jobs", "at most
// 20 calls to the partner's API"). Each acquire takes one of the key's N permits, a lease with
// the unique-key lock's semantics: a TTL on the database clock, background renewal, owner- and
// token-checked release and renew, lost() and on_lost, a fencing token.
//
//   dblock::Semaphore jobs(*pool, 3);                        // 3 permits per key
//   if (auto permit = jobs.acquire("jobs:report", 10s)) {   // waits up to 10 s for one
//     run_report(permit->fencing_token());
//   }                                                         // given back here
//
// Permits live in the semaphore_permits table (migration 6), one row per slot 0..N-1 of a key;
// an acquire takes a free slot (never held, released, or expired) in one upsert, picked at
// random among the free ones, so concurrent acquirers rarely pick the same one; two that do are
// decided by the primary key, and the loser tries another free slot at once. A try that finds
// every permit held writes nothing. PostgreSQL picks and takes the slot in one statement;
// MySQL/MariaDB read the key's slots first and take one in a second (two round trips).
//
// Guarantees: never more than N live permits of a key at once (N as stored for the key; see the
// limit below), by the database clock; a permit whose holder died is free again once its TTL
// has passed (the cleaner deletes such rows later). An acquire whose reply was lost is retried
// once with the same lease id, and the retry finds the permit it took instead of taking a
// second; a release is retried once with the same release id, and never frees a permit twice.
// lost() is as for every TTL lease (lock.hpp): never false while the database would give the
// permit to another owner.
//
// Not reentrant: every acquire takes a permit of its own, also for an owner that holds one
// already (N acquires of one thread take N permits). The owner is recorded, shown by
// `dblock locks`, and checked by release and renew.
//
// Fencing tokens: slot + 1024 x the database clock in microseconds, raised past the slot's
// previous token: strictly increasing per permit slot, never repeated within a key (token %
// 1024 is the slot), and growing with the database clock across the key's slots.
//
// The limit: the first acquire of a key stores this Semaphore's N with it (the semaphores
// table); an acquire through a Semaphore with another N throws Error(kFailedPrecondition) before
// taking anything, so two services configured differently cannot both believe their limit.
// set_limit(key) stores this Semaphore's N instead: permits held in slots past a lower limit stay
// held until they are given back, and no new one is granted there. So after a limit is lowered,
// more permits than the new limit may be live (up to the old one: the free slots below the new
// limit are granted as usual) until the holders past it give theirs back or lose them. The cleaner
// deletes a key's limit once the key has had no permit row (held, or freed within the grace) for
// the grace period, and never while a permit of the key is live or being taken, whatever the grace;
// the next acquire stores its own.
//
// Waiting (acquire with a timeout) polls with exponential backoff and full jitter
// (backoff.hpp); there is no notification and no queue: waiters are not served in order.
//
// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
// outlive this object and every lease it returned.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "dblock/backoff.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct SemaphoreOptions {
  TableNames tables{};
  BackoffPolicy backoff{};
  // Attempts for one try when the server reports a deadlock or serialization failure, or when
  // concurrent acquirers took the free slots this one picked.
  int contention_retries = 3;
};

class DBLOCK_EXPORT Semaphore final : public Lock {
 public:
  static constexpr int kMaxPermits = 1000;

  // `permits`: how many owners may hold a key at once, 1 to kMaxPermits; anything else throws
  // Error(kInvalidArgument).
  Semaphore(ConnectionSource& source, int permits, SemaphoreOptions options = {});
  ~Semaphore() override;

  int permits() const noexcept;

  // One permit of `key`, or nothing when all are held.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  // Stores permits() as `key`'s limit, whatever was stored before. Lowering it does not end
  // permits already held past the new limit (see above).
  void set_limit(std::string_view key);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dblock
