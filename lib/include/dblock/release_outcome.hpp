// SPDX-License-Identifier: Apache-2.0
/// @file
/// What giving a lease back did (Lease::release(), lock.hpp), in a header of its own so that the
/// lease's internals can name it without the Lock interface.
///
/// @code
///   dblock::ReleaseOutcome outcome = lease.release();
///   if (outcome == dblock::ReleaseOutcome::kNotHeld) log("the lease had been lost");
///   log(std::string(dblock::to_string(outcome)));  // "not_held"
/// @endcode
///
/// Thread-safety: a plain value; to_string() is safe from any thread.
#pragma once

#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

enum class ReleaseOutcome {
  kReleased,     ///< the key is free now
  kDecremented,  ///< a reentrant hold was given back; the owner still holds the key
  kNotHeld,      ///< the lease was lost (expired, taken over) or already released; nothing changed
  kConflict,     ///< optimistic strategy: another writer committed first; the transaction was
                 ///< rolled back and nothing of the critical section was kept
};

DBLOCK_EXPORT std::string_view to_string(ReleaseOutcome outcome) noexcept;

}  // namespace dblock
