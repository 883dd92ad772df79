// SPDX-License-Identifier: Apache-2.0
// The transaction state machine and the refusals every driver shares (see driver_connection.hpp).
//
// Thread-safety: one thread at a time per connection; the error builders are pure functions.
#include "drivers/driver_connection.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "drivers/error_mapping.hpp"
#include "observe.hpp"

namespace dblock::detail {

Error lost_error(std::string_view where) {
  return driver_error(ErrorCode::kConnectionLost, where,
                      "the connection is closed or was lost earlier", {});
}

Error misuse_error(std::string_view where, std::string_view message) {
  return driver_error(ErrorCode::kFailedPrecondition, where, message, {});
}

Error transaction_ended_error(std::string_view where) {
  return Error(ErrorCode::kLeaseLost,
               "the server ended this connection's transaction (a deadlock or lock wait timeout "
               "rolled it back, or a statement committed implicitly), and with it any lock it "
               "held; statements are refused until the transaction is rolled back (release or "
               "drop the lease, then acquire again) [" +
                   std::string(where) + "]");
}

Error notification_wait_error(std::string_view native, bool still_open, std::string_view where,
                              std::string_view secret) {
  std::string text = still_open ? "waiting for notifications failed"
                                : "the connection was lost while waiting for notifications";
  while (!native.empty() && (native.back() == '\n' || native.back() == ' ')) {
    native.remove_suffix(1);
  }
  if (!native.empty()) text.append(" (").append(native).append(")");
  return driver_error(still_open ? ErrorCode::kOther : ErrorCode::kConnectionLost, where, text,
                      secret);
}

DriverConnection::DriverConnection(std::string where, std::string secret)
    : where_(std::move(where)), secret_(std::move(secret)), opened_in_(::getpid()) {}

bool DriverConnection::opened_elsewhere() const noexcept { return ::getpid() != opened_in_; }

void DriverConnection::disown_if_inherited() noexcept {
  if (!opened_elsewhere()) return;
  const int fd = native_socket();
  if (fd < 0) return;
  // The descriptor now names /dev/null in this process only: what the client library sends on
  // closing (a terminate message, statement closes) goes nowhere, and the parent's session, on
  // its own descriptor, is untouched. Closing the socket here would not do: libpq and
  // libmysqlclient would close the number again, perhaps after it was reused.
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  ::dup2(null, fd);
  ::close(null);
}

Result DriverConnection::execute(std::string_view sql, std::span<const Value> params) {
  if (opened_elsewhere()) {
    throw driver_error(ErrorCode::kConnectionLost, where_,
                       "this connection was opened by process " + std::to_string(opened_in_) +
                           " before it forked; a process uses only the connections it opened "
                           "itself (a pool opens new ones in a child)",
                       {});
  }
  if (broken()) {
    mark_lost();
    throw lost_error(where_);
  }
  if (ended_) throw transaction_ended_error(where_);
  Result result;
  count_statement();  // for an observed acquisition on this thread (observe.hpp)
  try {
    result = run_statement(sql, params);
  } catch (const Error& e) {
    note_failure(e);
    throw;
  } catch (...) {
    // E.g. out of memory halfway through a result: the protocol state is unknown.
    mark_lost();
    throw;
  }
  statement_failed_ = false;
  if (in_transaction_ && server_ended_transaction(nullptr)) ended_ = true;
  if (commit_in_doubt()) throw sync_replication_cancelled_error(where_);
  return result;
}

void DriverConnection::begin() {
  if (broken()) throw lost_error(where_);
  if (in_transaction_) throw misuse_error(where_, "begin() called while a transaction is open");
  execute(dialect() == Dialect::kMySQL ? "START TRANSACTION" : "BEGIN");
  in_transaction_ = true;
  statement_failed_ = false;
  ended_ = false;
}

void DriverConnection::commit() {
  if (broken()) throw lost_error(where_);
  if (!in_transaction_) throw misuse_error(where_, "commit() called without an open transaction");
  const bool ended = ended_;
  const bool failed = !ended && transaction_failed();
  in_transaction_ = false;  // COMMIT and ROLLBACK end the transaction even when they fail
  ended_ = false;
  if (ended) {
    roll_back_now();
    throw transaction_ended_error(where_);
  }
  execute(failed ? "ROLLBACK" : "COMMIT");
  if (failed) {
    throw misuse_error(where_,
                       "commit() after a statement in the transaction failed: rolled back instead");
  }
}

void DriverConnection::rollback() noexcept {
  if (!in_transaction_) return;
  in_transaction_ = false;
  ended_ = false;
  roll_back_now();
}

bool DriverConnection::in_transaction() const noexcept { return in_transaction_ && !ended_; }

bool DriverConnection::broken() const noexcept {
  return broken_ || opened_elsewhere() || !native_open();
}

bool DriverConnection::server_ended_transaction(const Error*) noexcept { return false; }

bool DriverConnection::transaction_failed() const noexcept {
  return dialect() == Dialect::kPostgreSQL && statement_failed_;
}

bool DriverConnection::commit_in_doubt() noexcept { return false; }

void DriverConnection::fail(Error err) {
  if (err.code() == ErrorCode::kConnectionLost) mark_lost();
  throw std::move(err);
}

void DriverConnection::fail_statement(Error err) {
  note_failure(err);
  throw std::move(err);
}

void DriverConnection::note_failure(const Error& err) noexcept {
  if (err.code() == ErrorCode::kConnectionLost) {
    mark_lost();
    return;
  }
  if (!in_transaction_) return;
  statement_failed_ = true;
  if (server_ended_transaction(&err)) ended_ = true;
}

void DriverConnection::mark_lost() noexcept {
  broken_ = true;
  in_transaction_ = false;
  statement_failed_ = false;
  ended_ = false;
}

void DriverConnection::roll_back_now() noexcept {
  if (broken()) return;
  try {
    execute("ROLLBACK");
  } catch (...) {
    // The session is in an unknown state; make sure no pool hands it out again.
    broken_ = true;
  }
}

}  // namespace dblock::detail
