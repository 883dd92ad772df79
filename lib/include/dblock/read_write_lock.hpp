// SPDX-License-Identifier: Apache-2.0
// The reader-writer lock: many readers of a key at once, or one writer, and a waiting writer is
// not starved by a stream of readers. Two Lock views of one object: reader() hands out shared
// leases, writer() exclusive ones; both are leases with the semaphore's semantics (semaphore.hpp):
// a TTL on the database clock, background renewal, owner- and token-checked release and renew,
// lost() and on_lost, fencing tokens.
//
//   dblock::ReadWriteLock prices(*pool);
//   if (auto read = prices.reader().acquire("prices:eu", 5s)) { show(load()); }
//   if (auto write = prices.writer().acquire("prices:eu", 30s)) { store(write->fencing_token()); }
//
// Built on the semaphore's tables: a key has max_readers + 1 permit slots; slot 0 is the writer's,
// slots 1 and up are the readers'. A writer first takes slot 0, which from then on refuses new
// readers, then waits until the readers already in have given their permits back (or lost them
// to their TTL); only then does acquire() return its lease. A writer that runs out of time gives
// slot 0 back. A reader takes a free reader slot, then reads slot 0: if a writer has taken it
// meanwhile, the reader gives its permit back and waits (each side writes before it reads what
// the other wrote, so one of them always sees the other: a reader and a writer never both
// hold the key). While a writer waits or holds, readers wait, so writers come first: a stream
// of writers can keep readers waiting, a stream of readers cannot keep a writer waiting longer
// than the readers already in hold.
//
// Guarantees: never a writer and a reader, nor two writers, holding a key at once, and never more
// than max_readers readers, by the database clock; a dead holder's lease (or a dead writer's
// place at slot 0) ends with its TTL. Writers' fencing tokens strictly increase per key; no token
// repeats within a key (see semaphore.hpp for the token's form).
//
// Not reentrant, and no upgrade: a thread holding a read lease that asks for the write lease of
// the same key waits for itself until its timeout (its own read lease is one of the readers the
// writer waits for).
//
// The limit: max_readers + 1 is stored as the key's semaphore limit; a ReadWriteLock with another
// max_readers throws Error(kFailedPrecondition) before taking anything (to change it, call
// set_limit(key) on a Semaphore of max_readers + 1 permits). Do not use one key with both a
// Semaphore and a ReadWriteLock. `dblock locks` lists both kinds of lease as semaphore
// permits (the writer's is permit 1 of max_readers + 1).
//
// Waiting polls with exponential backoff and full jitter (backoff.hpp).
//
// Thread-safety: all methods may be called from many threads at once. The ConnectionSource must
// outlive this object and every lease it returned.
#pragma once

#include <memory>

#include "dblock/export.hpp"
#include "dblock/semaphore.hpp"

namespace dblock {

struct ReadWriteLockOptions {
  TableNames tables{};
  BackoffPolicy backoff{};
  int contention_retries = 3;
  // How many readers may hold a key at once: 1 to Semaphore::kMaxPermits - 1.
  int max_readers = 100;
};

class DBLOCK_EXPORT ReadWriteLock {
 public:
  // Throws Error(kInvalidArgument) for max_readers out of range.
  explicit ReadWriteLock(ConnectionSource& source, ReadWriteLockOptions options = {});
  ~ReadWriteLock();
  ReadWriteLock(const ReadWriteLock&) = delete;
  ReadWriteLock& operator=(const ReadWriteLock&) = delete;

  // Shared leases: a reader waits (or a try fails) while a writer holds or waits.
  Lock& reader() noexcept;
  // Exclusive leases.
  Lock& writer() noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dblock
