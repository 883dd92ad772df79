// SPDX-License-Identifier: Apache-2.0
/// @file
/// Semaphore: at most N owners hold a key at once ("at most 3 report jobs", "at most 20 calls to
/// the partner's API"), by the database clock. Each acquire takes one of the key's N permits (rows
/// of \<prefix>semaphore_permits), a lease with the unique-key lock's semantics: a TTL on the
/// database clock, background renewal, owner- and token-checked release and renew, lost() and
/// on_lost, a fencing token that strictly increases per permit slot. Not reentrant: every acquire
/// takes a permit of its own. The first acquire of a key stores N with it; an acquire through a
/// Semaphore with another N throws Error(kFailedPrecondition) before taking anything. Waiters poll
/// with backoff, with no queue and no notification, so they are not served in order.
///
/// @code
///   dblock::Semaphore jobs(*pool, 3);                        // 3 permits per key
///   if (auto permit = jobs.acquire("jobs:report", 10s)) {   // waits up to 10 s for one
///     run_report(permit->fencing_token());
///   }                                                         // given back here
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
/// outlive this object and every lease it returned.
///
/// Explained in docs/locks/semaphore.md.
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
  /// Attempts for one try when the server reports a deadlock or serialization failure, or when
  /// concurrent acquirers took the free slots this one picked.
  int contention_retries = 3;
  /// PostgreSQL: waiters sleep on LISTEN (one session per lock object, opened at its first wait)
  /// between tries, and each release that frees a permit wakes them, so a freed permit is tried
  /// for at once instead of at the next backoff step. Off by default: every waiting lock object
  /// is woken by each release, and under heavy contention between many processes that herd cost
  /// more than it saved in the benchmark (docs/locks/semaphore.md). With it, this object's
  /// releases NOTIFY too: give every Semaphore of a table the same setting. No effect on
  /// MySQL/MariaDB; waiters poll when the source cannot open a dedicated connection.
  bool notify = false;
};

namespace detail {
struct SemaphoreCore;  // what the lock object and its leases share (lib/src)
}  // namespace detail

class DBLOCK_EXPORT Semaphore final : public Lock {
 public:
  static constexpr int kMaxPermits = 1000;

  /// `permits`: how many owners may hold a key at once, 1 to kMaxPermits; anything else throws
  /// Error(kInvalidArgument).
  Semaphore(ConnectionSource& source, int permits, SemaphoreOptions options = {});
  ~Semaphore() override;

  int permits() const noexcept;

  /// One permit of `key`, or nothing when all are held.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  /// Stores permits() as `key`'s limit, whatever was stored before. Lowering it does not end
  /// permits already held past the new limit (docs/locks/semaphore.md).
  void set_limit(std::string_view key);

 private:
  std::shared_ptr<detail::SemaphoreCore> impl_;
};

}  // namespace dblock
