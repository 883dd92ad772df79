// SPDX-License-Identifier: Apache-2.0
// Permits of the semaphore tables, taken from a range of a key's slots: what Semaphore (every
// slot) and ReadWriteLock (readers: slots 1 and up, refused while slot 0 is held; the writer:
// slot 0) are built from. Internal.
//
// Thread-safety: as Semaphore.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "dblock/semaphore.hpp"

namespace dblock::detail {

struct PermitListener;  // a lock object's release listener (semaphore.cpp)

// The slots an acquire may take: from `first` to `last` (and below the key's limit), none while
// slot `blocked_by` (unless negative) holds a live permit. `limit` is the key's stored limit.
struct PermitSlots {
  int limit = 1;
  int first = 0;
  int last = 0;
  int blocked_by = -1;
  bool read_write = false;  // a ReadWriteLock's (for the messages)
};

// `listen_with`: a core whose release listener this one shares (a ReadWriteLock's writer
// shares its readers'), instead of one of its own.
std::shared_ptr<detail::SemaphoreCore> make_permits(
    ConnectionSource& source, PermitSlots slots, SemaphoreOptions options,
    const detail::SemaphoreCore* listen_with = nullptr);

// The pause between two tries for a permit of `key` (or, a ReadWriteLock's writer, for its
// readers to leave): until a release of one of the key's permits is heard (PostgreSQL with
// SemaphoreOptions::notify: release_listener.hpp), or the pause ends.
class PermitWait {
 public:
  PermitWait(detail::SemaphoreCore& impl, const std::string& key);
  ~PermitWait();
  PermitWait(const PermitWait&) = delete;
  PermitWait& operator=(const PermitWait&) = delete;
  void pause(std::chrono::milliseconds d);
  // A try got what it waited for: another waiter of the key asleep here tries too (a release's
  // notification wakes one waiter per lock object, and more than one permit may be free).
  void took();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A permit of `key`: one try for a zero timeout, else a wait (std::chrono::milliseconds::max():
// without a limit).
std::optional<Lease> take_permit(const std::shared_ptr<detail::SemaphoreCore>& impl,
                                 std::string_view key, std::chrono::milliseconds timeout,
                                 const LockOptions& options);

// How the rows a count of live permits reads are locked for its statement: shared or exclusive.
// The read waits for a fenced transaction holding a conflicting lock on one of the rows
// (docs/locks/fencing.md), whatever the row's expiry.
enum class RowLocks { kShared, kExclusive };

// How many live permits `key` has in slots `first` to `last`, their rows locked as `locks` says.
std::int64_t live_permits(detail::SemaphoreCore& impl, const std::string& key, int first, int last,
                          RowLocks locks);

// Stores the limit of `impl` as `key`'s, whatever was stored.
void store_limit(detail::SemaphoreCore& impl, std::string_view key);

}  // namespace dblock::detail
