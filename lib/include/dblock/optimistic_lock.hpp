// SPDX-License-Identifier: Apache-2.0
/// @file
/// OptimisticLock: version compare-and-set instead of exclusion. acquire reads the key's version
/// (a row of \<prefix>versions) in a new transaction on a connection the lease keeps, and returns
/// at once: optimistic leases never exclude or wait for each other. release() commits only if
/// nobody committed under the key meanwhile (ReleaseOutcome::kReleased); otherwise it rolls back
/// and returns kConflict, and with_lock runs the critical section again under retry_policy().
/// A stale reader never wins, even after the version row was deleted. Every write must go through
/// Lease::connection(), and every writer of the protected data must use the same key. Not
/// reentrant. fencing_token() is the version read. For compare-and-set on the caller's own
/// tables without a version row, see conditional_update.hpp.
///
/// @code
///   dblock::OptimisticLock versions(*pool);
///   dblock::LockAttempts tries;
///   dblock::with_lock(versions, "page:7", 5s, {}, [&](dblock::Lease& lease) {
///     dblock::Connection& db = *lease.connection();  // the lease's transaction
///     dblock::Result page = db.execute("SELECT visits FROM pages WHERE id = $1", {7});
///     db.execute("UPDATE pages SET visits = $1 WHERE id = 7", {page.int64_at(0, "visits") + 1});
///   }, &tries);  // commits only if no one else committed under "page:7" meanwhile;
///                // otherwise rolls back and runs the lambda again (tries.attempts)
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. A lease and its
/// connection are used by one thread at a time. The ConnectionSource must outlive this object
/// and every lease it returned.
///
/// Explained in docs/locks/optimistic.md.
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
  /// with_lock: attempts in all (first run included) and the pause between them.
  RetryPolicy retry{10, BackoffPolicy{std::chrono::milliseconds(2), std::chrono::milliseconds(100),
                                      std::chrono::milliseconds(1)}};
};

namespace detail {
struct OptimisticLockCore;  // what the lock object and its leases share (lib/src)
}  // namespace detail

class DBLOCK_EXPORT OptimisticLock final : public Lock {
 public:
  explicit OptimisticLock(ConnectionSource& source, OptimisticLockOptions options = {});
  ~OptimisticLock() override;

  /// Never "not acquired": reads the version and opens the transaction.
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options = {}) override;
  /// The same as try_acquire (there is nothing to wait for); the timeout is validated only.
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options = {}) override;
  using Lock::acquire;

  RetryPolicy retry_policy() const override;

 private:
  std::shared_ptr<detail::OptimisticLockCore> impl_;
};

}  // namespace dblock
