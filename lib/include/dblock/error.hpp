// SPDX-License-Identifier: Apache-2.0
/// @file
/// dblock::Error: the one exception type dblock throws for faults.
///
/// Expected outcomes (a lock not acquired, a wait that timed out, an optimistic conflict) are
/// returned as values, never thrown. Everything thrown is a dblock::Error whose code() tells the
/// caller what to do next. Messages never contain a password.
///
/// Thread-safety: Error is an immutable value; copies may be used from any thread.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

/// What went wrong, grouped by what the caller should do next.
enum class ErrorCode {
  /// A unique or primary-key constraint rejected a write. Inside dblock this usually means
  /// "someone else got there first"; callers rarely see it.
  kUniqueViolation,
  /// A NOWAIT lock request found the row locked. Retry later or report "busy".
  kLockNotAvailable,
  /// A lock wait exceeded the server's lock timeout. Retry later or report "busy".
  kLockWaitTimeout,
  /// The server chose this transaction as a deadlock victim and rolled it back. Retry.
  kDeadlock,
  /// A serializable/repeatable-read transaction could not be serialised. Retry.
  kSerializationFailure,
  /// The connection broke during a call. The outcome of that call is unknown; reconnect and
  /// retry only idempotent work.
  kConnectionLost,
  /// Could not open a connection: server unreachable or refused. Fix the URL or start the server.
  kConnectFailed,
  /// The server rejected the credentials or lacks a privilege. Fix the user, password or grants.
  kAccessDenied,
  /// A table dblock needs does not exist. Run `dblock migrate up`.
  kUndefinedTable,
  /// The caller passed something invalid (URL, identifier, key, option). Fix the input.
  kInvalidArgument,
  /// The call is not allowed in the state things are in: the database's (an applied migration
  /// was edited, row locks on a multi-writer cluster) or the program's (begin() inside a
  /// transaction, a statement on a connection whose transactional lease ended, a result read by
  /// a column it does not have). Fix the program or the setup; retrying will not help.
  kFailedPrecondition,
  /// No connection of the pool became free within its acquire timeout: every one is lent out.
  /// Retry later, give connections back sooner, or make the pool larger.
  kPoolExhausted,
  /// A COMMIT was sent, but whether it took effect is unknown: the connection broke before the
  /// reply came. The transaction's writes (a row-lock or optimistic critical section) may or may
  /// not be in the database. Do not retry blindly: read what is there, then redo the work only if
  /// it is missing.
  kCommitInDoubt,
  /// A lease ended while its critical section ran: it expired or was taken over (unique key), or
  /// the server ended its transaction (row lock, optimistic). The work done under it was not
  /// protected the whole time; another owner may have held the key meanwhile. Do not report the
  /// work as done under the lock: check or undo it (writes fenced with the lease's token are
  /// rejected by a newer holder's), then acquire again if it must be redone.
  kLeaseLost,
  /// Anything else the server or driver reported.
  kOther,
};

/// A stable lower-case name for a code, e.g. "lock_wait_timeout".
DBLOCK_EXPORT std::string_view to_string(ErrorCode code) noexcept;

/// What may be retried after an error with this code.
enum class RetryScope {
  /// Nothing: retrying as is will fail again or may do the work twice. Read the code's comment.
  kNone,
  /// The call that failed (an acquire, a try, a renewal; a statement outside a transaction):
  /// lock-not-available, lock-wait-timeout, connection lost, pool exhausted. dblock's own
  /// acquires are idempotent, so retrying them after a lost connection is safe.
  kCall,
  /// The whole transaction: the server rolled it back (deadlock, serialization failure), so a
  /// row-lock or optimistic critical section must start again from its acquire.
  kTransaction,
};

DBLOCK_EXPORT RetryScope retry_scope(ErrorCode code) noexcept;

/// True when retry_scope(code) is not kNone.
DBLOCK_EXPORT bool is_retryable(ErrorCode code) noexcept;

class DBLOCK_EXPORT Error : public std::runtime_error {
 public:
  /// `message` must already be free of secrets. `sqlstate` is the five-character SQLSTATE when
  /// the server reported one; `server_errno` the native error number (MySQL) or 0.
  Error(ErrorCode code, const std::string& message, std::string sqlstate = {},
        int server_errno = 0);

  ErrorCode code() const noexcept { return code_; }
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  int server_errno() const noexcept { return server_errno_; }
  bool retryable() const noexcept { return is_retryable(code_); }
  RetryScope retry_scope() const noexcept { return dblock::retry_scope(code_); }

 private:
  ErrorCode code_;
  std::string sqlstate_;
  int server_errno_;
};

}  // namespace dblock
