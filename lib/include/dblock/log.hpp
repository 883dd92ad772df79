// SPDX-License-Identifier: Apache-2.0
/// @file
/// A log hook for what the library notices but does not throw: a renewal that failed and is
/// retried (with the time left before the lease counts as lost), a renewal that works again, a
/// lease found lost, a release kept after a lost connection and the resend of it, a release on
/// destruction that failed, a notification session lost and reconnecting. Messages name the key
/// (or the notification channel). Nothing is logged and
/// no message is formatted while no handler is installed.
///
/// @code
///   dblock::set_log_handler([](dblock::LogLevel level, std::string_view message) {
///     spdlog::log(level >= dblock::LogLevel::kWarning ? spdlog::level::warn : spdlog::level::info,
///                 "dblock: {}", message);
///   });
/// @endcode
///
/// Thread-safety: set_log_handler() may be called from any thread at any time; the handler is
/// called on the thread where the thing happened (the renewer's, a notification listener's, the
/// caller's), possibly on several threads at once, so it must be thread-safe. It must not call
/// back into the lock that logs (it may run while that lock's state is being changed) and must
/// not throw (what it throws is dropped), nor call set_log_handler(). Once set_log_handler()
/// returns, the previous handler is no longer called.
///
/// Explained in docs/operations/monitoring.md.
#pragma once

#include <functional>
#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

/// How much a message matters.
enum class LogLevel {
  kDebug,    ///< detail for tracing the library's work
  kInfo,     ///< something recovered (a renewal works again, a kept release was re-sent)
  kWarning,  ///< something failed and is retried, or will end a lease if it goes on
  kError,    ///< a lease was lost, or something failed for good
};

/// The lowercase name of a level: "debug", "info", "warning", "error".
DBLOCK_EXPORT std::string_view to_string(LogLevel level) noexcept;

/// Receives one message: a sentence without a trailing newline.
using LogHandler = std::function<void(LogLevel level, std::string_view message)>;

/// Installs the process-wide handler, replacing any; an empty one removes it.
DBLOCK_EXPORT void set_log_handler(LogHandler handler);

}  // namespace dblock
