// SPDX-License-Identifier: Apache-2.0
/// @file
/// ReadWriteLock: many readers of a key at once (up to max_readers), or one writer, and a waiting
/// writer is not starved by a stream of readers: writers come first. reader() and writer() are
/// two Lock views of one object, handing out shared and exclusive leases with the semaphore's
/// semantics (semaphore.hpp): a TTL on the database clock, background renewal, owner- and
/// token-checked release and renew, lost() and on_lost, fencing tokens. Not reentrant, and no
/// upgrade: a thread holding a read lease that asks for the write lease of the same key waits for
/// itself until its timeout. max_readers + 1 is stored as the key's semaphore limit: a
/// ReadWriteLock with another max_readers throws Error(kFailedPrecondition) before taking
/// anything. Do not use one key with both a Semaphore and a ReadWriteLock. Waiters poll.
///
/// @code
///   dblock::ReadWriteLock prices(*pool);
///   if (auto read = prices.reader().acquire("prices:eu", 5s)) { show(load()); }
///   if (auto write = prices.writer().acquire("prices:eu", 30s)) { store(write->fencing_token()); }
/// @endcode
///
/// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
/// outlive this object and every lease it returned.
///
/// Explained in docs/locks/reader-writer.md.
#pragma once

#include <memory>

#include "dblock/export.hpp"
#include "dblock/semaphore.hpp"

namespace dblock {

struct ReadWriteLockOptions {
  TableNames tables{};
  BackoffPolicy backoff{};
  int contention_retries = 3;
  /// How many readers may hold a key at once: 1 to Semaphore::kMaxPermits - 1.
  int max_readers = 100;
  /// PostgreSQL: waiters (readers, writers, a writer waiting for readers to leave) sleep on
  /// LISTEN between tries and are woken by releases, as SemaphoreOptions::notify (off by
  /// default).
  bool notify = false;
};

namespace detail {
struct ReadWriteLockCore;  // what the lock object and its leases share (lib/src)
}  // namespace detail

class DBLOCK_EXPORT ReadWriteLock {
 public:
  /// Throws Error(kInvalidArgument) for max_readers out of range.
  explicit ReadWriteLock(ConnectionSource& source, ReadWriteLockOptions options = {});
  ~ReadWriteLock();
  ReadWriteLock(const ReadWriteLock&) = delete;
  ReadWriteLock& operator=(const ReadWriteLock&) = delete;

  /// Shared leases: a reader waits (or a try fails) while a writer holds or waits.
  Lock& reader() noexcept;
  /// Exclusive leases.
  Lock& writer() noexcept;

 private:
  std::unique_ptr<detail::ReadWriteLockCore> impl_;
};

}  // namespace dblock
