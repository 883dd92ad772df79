// SPDX-License-Identifier: Apache-2.0
// The optimistic strategy: version compare-and-set instead of exclusion.
//
//   dblock::OptimisticLock versions(*pool);
//   dblock::LockAttempts tries;
//   auto sold = dblock::with_lock(versions, "voucher:7", 5s, {}, [&](dblock::Lease& lease) {
//     auto& db = *lease.connection();              // the lease's transaction
//     ... read stock, write the order, write stock - 1 ...
//   }, &tries);   // commits only if no one else committed under "voucher:7" meanwhile;
//                 // otherwise rolls back and runs the lambda again (tries.attempts)
//
// acquire reads the key's version (creating the key's row in <prefix>versions on first use) in
// a new transaction on a connection dedicated to the lease, and returns at once: optimistic
// leases never exclude or wait for each other. release() then runs
// `UPDATE ... SET version = <next> WHERE key = ? AND version = <read>` and commits when exactly
// one row changed (ReleaseOutcome::kReleased); otherwise another writer committed first, the
// transaction is rolled back and release() returns ReleaseOutcome::kConflict. A lease dropped
// without release() rolls back.
//
// Versions are the database clock in microseconds raised past the previous version, so a version
// row deleted (by the cleaner, or by hand) and created again never repeats a version an old
// reader holds: a stale reader can never win (no ABA). The lease's fencing_token() is the version
// it read.
//
// Everything the critical section writes must go through the lease's connection, and every
// writer of the protected data must use the same key: the compare-and-set protects exactly the
// transactions that take part in it. Not reentrant: a second lease on the same key reads the same
// version, so at most one of the two commits.
//
// with_lock retries a conflicted critical section under retry_policy() (bounded, with jittered
// backoff); deadlocks and serialization failures thrown from inside it count as conflicts too.
//
// For compare-and-set on the caller's own tables without a version row, see
// conditional_update.hpp.
//
// Thread-safety: all methods may be called from many threads at once. A lease and its
// connection are used by one thread at a time. The ConnectionSource must outlive this object
// and every lease it returned.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct OptimisticLockOptions {
  TableNames tables{};
  // with_lock: attempts in all (first run included) and the pause between them.
  RetryPolicy retry{10, BackoffPolicy{std::chrono::milliseconds(2), std::chrono::milliseconds(100),
                                      std::chrono::milliseconds(1)}};
};

class DBLOCK_EXPORT OptimisticLock final : public Lock {
 public:
  explicit OptimisticLock(ConnectionSource& source, OptimisticLockOptions options = {});
  ~OptimisticLock() override;

  // Never "not acquired": reads the version and opens the transaction.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  // The same as try_acquire (there is nothing to wait for); the timeout is validated only.
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  RetryPolicy retry_policy() const override;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace dblock
