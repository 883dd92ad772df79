// SPDX-License-Identifier: Apache-2.0
// Errors about the caller's own tables, which row locks (try_acquire_row) and conditional updates
// work on. A table missing there is the caller's to create; the drivers' advice for a missing
// table ("run `dblock migrate up`") is about dblock's own tables and would mislead. Internal.
//
// Thread-safety: safe from any thread.
#pragma once

#include <string_view>

#include "dblock/error.hpp"

namespace dblock::detail {

// Throws an Error(kUndefinedTable) that names `table` and what it was used for, in place of `e`,
// when `e` says a table is missing; rethrows `e` otherwise. Call it from a catch block.
[[noreturn]] void rethrow_for_caller_table(const Error& e, std::string_view table,
                                           std::string_view used_for);

}  // namespace dblock::detail
