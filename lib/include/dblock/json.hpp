// SPDX-License-Identifier: Apache-2.0
/// @file
/// Lock metadata as nlohmann::json, for services that use that library. Opt-in: the other public
/// headers hold metadata as JSON text and do not include nlohmann/json.hpp, so only the files
/// that include this header pay for compiling it (and need nlohmann_json to build).
///
/// @code
///   #include <dblock/json.hpp>
///   dblock::LockOptions options;
///   options.metadata = dblock::metadata_text({{"job", "nightly"}, {"attempt", 3}});
///   ...
///   for (const dblock::LockRow& row : dblock::list_locks(*conn, tables)) {
///     nlohmann::json meta = dblock::metadata_json(row.metadata);  // null when none
///   }
/// @endcode
///
/// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dblock/error.hpp"

namespace dblock {

/// The text for LockOptions::metadata / ClaimOptions::metadata: `value` serialised, or "" (no
/// metadata) for a null value. Throws Error(kInvalidArgument) when a string in `value` is not
/// valid UTF-8 (JSON text must be).
inline std::string metadata_text(const nlohmann::json& value) {
  if (value.is_null()) return {};
  try {
    return value.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("the lock metadata cannot be written as JSON text: ") + e.what());
  }
}

/// Stored metadata (LockRow::metadata) as a value: null for "" (none). Throws
/// Error(kInvalidArgument) for text that is not JSON.
inline nlohmann::json metadata_json(std::string_view text) {
  if (text.empty()) return nullptr;
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    throw Error(ErrorCode::kInvalidArgument, "the lock metadata read back is not JSON text");
  }
  return value;
}

}  // namespace dblock
