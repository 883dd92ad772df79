// SPDX-License-Identifier: Apache-2.0
// The names of release outcomes (dblock/release_outcome.hpp).
//
// Thread-safety: a pure function.
#include "dblock/release_outcome.hpp"

#include "enum_names.hpp"

namespace dblock {

std::string_view to_string(ReleaseOutcome outcome) noexcept {
  constexpr auto kNames = detail::enum_names<ReleaseOutcome::kConflict>(
      {"released", "decremented", "not_held", "conflict"});
  return kNames.of(outcome, "not_held");
}

}  // namespace dblock
