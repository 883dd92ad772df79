// SPDX-License-Identifier: Apache-2.0
#include "dblock/error.hpp"

namespace dblock {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kUniqueViolation:
      return "unique_violation";
    case ErrorCode::kLockNotAvailable:
      return "lock_not_available";
    case ErrorCode::kLockWaitTimeout:
      return "lock_wait_timeout";
    case ErrorCode::kDeadlock:
      return "deadlock";
    case ErrorCode::kSerializationFailure:
      return "serialization_failure";
    case ErrorCode::kConnectionLost:
      return "connection_lost";
    case ErrorCode::kConnectFailed:
      return "connect_failed";
    case ErrorCode::kAccessDenied:
      return "access_denied";
    case ErrorCode::kUndefinedTable:
      return "undefined_table";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kFailedPrecondition:
      return "failed_precondition";
    case ErrorCode::kPoolExhausted:
      return "pool_exhausted";
    case ErrorCode::kCommitInDoubt:
      return "commit_in_doubt";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kOther:
      return "other";
  }
  return "other";
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
