// SPDX-License-Identifier: Apache-2.0
// The names of release outcomes (dblock/release_outcome.hpp).
//
// Thread-safety: a pure function.
#include "dblock/release_outcome.hpp"

namespace dblock {

std::string_view to_string(ReleaseOutcome outcome) noexcept {
  switch (outcome) {
    case ReleaseOutcome::kReleased:
      return "released";
    case ReleaseOutcome::kDecremented:
      return "decremented";
    case ReleaseOutcome::kNotHeld:
      return "not_held";
    case ReleaseOutcome::kConflict:
      return "conflict";
  }
  return "not_held";
}

}  // namespace dblock
