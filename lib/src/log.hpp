// SPDX-License-Identifier: Apache-2.0
// Where the library writes to the log hook (dblock/log.hpp). A message is formatted only when a
// handler is installed:
//
//   if (detail::logging()) detail::log(LogLevel::kWarning, "renewing " + key + " failed");
//
// Thread-safety: both may be called from any thread.
#pragma once

#include <atomic>
#include <string_view>

#include "dblock/log.hpp"

namespace dblock::detail {

// True while a handler is installed (one relaxed load).
bool logging() noexcept;

// Passes `message` to the handler, if any; what the handler throws is dropped.
void log(LogLevel level, std::string_view message) noexcept;

}  // namespace dblock::detail
