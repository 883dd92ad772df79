// SPDX-License-Identifier: Apache-2.0
// Lock metadata: the JSON text a caller stores with a lock row (LockOptions::metadata), checked
// before anything is sent, and bound as the statements' "metadata" parameter. Internal.
//
//   detail::validate_metadata(options.metadata);            // throws on text that is not JSON
//   args.push_back({"metadata", detail::metadata_param(options.metadata)});
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "dblock/connection.hpp"

namespace dblock::detail {

// Deepest nesting of arrays and objects every supported server stores: MariaDB's JSON_VALID
// refuses 32 levels (MySQL allows 100; PostgreSQL is bounded by its stack).
inline constexpr int kMaxMetadataDepth = 31;

// Throws Error(kInvalidArgument), saying what is wrong and where, unless `text` is empty (no
// metadata) or one JSON value every supported server stores as given, and that nlohmann::json
// reads back (dblock/json.hpp): well-formed JSON (RFC 8259) in UTF-8, nested at most
// kMaxMetadataDepth deep, numbers within a double's range, and no "\u0000" in a string or name
// (PostgreSQL's jsonb cannot hold a NUL character).
void validate_metadata(std::string_view text);

// The statement parameter for `text`: NULL when empty, else the text itself.
Value metadata_param(std::string_view text);

}  // namespace dblock::detail
