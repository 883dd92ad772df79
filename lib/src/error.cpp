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
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kOther:
      return "other";
  }
  return "other";
}

bool is_retryable(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kLockNotAvailable:
    case ErrorCode::kLockWaitTimeout:
    case ErrorCode::kDeadlock:
    case ErrorCode::kSerializationFailure:
    case ErrorCode::kConnectionLost:
      return true;
    default:
      return false;
  }
}

Error::Error(ErrorCode code, const std::string& message, std::string sqlstate, int server_errno)
    : std::runtime_error(message),
      code_(code),
      sqlstate_(std::move(sqlstate)),
      server_errno_(server_errno) {}

}  // namespace dblock
