// SPDX-License-Identifier: Apache-2.0
#include "dblock/error.hpp"

#include "enum_names.hpp"

namespace dblock {

std::string_view to_string(ErrorCode code) noexcept {
  constexpr auto kNames = detail::enum_names<ErrorCode::kOther>(
      {"unique_violation", "lock_not_available", "lock_wait_timeout", "deadlock",
       "serialization_failure", "connection_lost", "connect_failed", "access_denied",
       "undefined_table", "invalid_argument", "failed_precondition", "pool_exhausted",
       "commit_in_doubt", "lease_lost", "other"});
  return kNames.of(code, "other");
}

RetryScope retry_scope(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kLockNotAvailable:
    case ErrorCode::kLockWaitTimeout:
    case ErrorCode::kConnectionLost:
    case ErrorCode::kPoolExhausted:
      return RetryScope::kCall;
    case ErrorCode::kDeadlock:
    case ErrorCode::kSerializationFailure:
      return RetryScope::kTransaction;
    default:
      return RetryScope::kNone;
  }
}

bool is_retryable(ErrorCode code) noexcept { return retry_scope(code) != RetryScope::kNone; }

Error::Error(ErrorCode code, const std::string& message, std::string sqlstate, int server_errno)
    : std::runtime_error(message),
      code_(code),
      sqlstate_(std::move(sqlstate)),
      server_errno_(server_errno) {}

}  // namespace dblock
