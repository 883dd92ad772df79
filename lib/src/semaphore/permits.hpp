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

// The slots an acquire may take: from `first` to `last` (and below the key's limit), none while
// slot `blocked_by` (unless negative) holds a live permit. `limit` is the key's stored limit.
struct PermitSlots {
  int limit = 1;
  int first = 0;
  int last = 0;
  int blocked_by = -1;
  bool read_write = false;  // a ReadWriteLock's (for the messages)
};

std::shared_ptr<detail::SemaphoreCore> make_permits(ConnectionSource& source, PermitSlots slots,
                                                    SemaphoreOptions options);

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
