// SPDX-License-Identifier: Apache-2.0
// The part of dblock::Connection that every driver shares: the transaction state machine (begin,
// commit, rollback, a statement that failed inside the transaction, a transaction the server
// ended on its own, a connection found lost) and the errors a driver raises without asking the
// server. A driver derives from DriverConnection and supplies the primitives: run one statement,
// whether its native handle is still open, and the hooks below where databases or client
// libraries differ. Internal; compiled into dblock_core so that every driver target can use it.
//
// Rules the base keeps for every driver:
//  - BEGIN, COMMIT and ROLLBACK are plain statements, sent through run_statement(); this class
//    tracks whether a transaction is open.
//  - A connection found lost stays broken: nothing reopens it. A lost connection has no open
//    transaction. A primitive that throws anything but a dblock::Error leaves the protocol in an
//    unknown state, so the connection counts as lost too.
//  - PostgreSQL answers COMMIT of a failed transaction with a silent ROLLBACK: commit() then
//    rolls back and says so (kFailedPrecondition).
//  - Once the server has ended the open transaction (MySQL: deadlock, lock wait timeout under
//    innodb_rollback_on_timeout, implicit commit; see mysql_transaction.hpp), every statement is
//    refused with transaction_ended_error() until rollback(), and in_transaction() is false.
//  - A successful statement after which the driver reports a doubtful commit (PostgreSQL's
//    synchronous-replication wait cancelled) throws kCommitInDoubt.
//  - A connection belongs to the process that opened it. In a forked child it is broken(), its
//    statements are refused (kConnectionLost), and a driver's destructor calls
//    disown_if_inherited() first, so that closing it sends nothing on the socket the parent still
//    uses (a pool drops such connections and opens new ones in the child).
//
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#pragma once

#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>

#include "dblock/connection.hpp"
#include "dblock/error.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// kConnectionLost for a call refused because the connection is known to be broken.
Error lost_error(std::string_view where);
// kFailedPrecondition for misuse such as begin() inside a transaction (fix the program).
Error misuse_error(std::string_view where, std::string_view message);
// kLeaseLost: the server ended this connection's transaction, and with it any lock it held.
Error transaction_ended_error(std::string_view where);
// A failure while waiting for notifications: kConnectionLost when the connection is no longer
// open (`still_open` false), kOther otherwise. `native` is the client library's or the system's
// text, if any; `secret` is scrubbed from it.
Error notification_wait_error(std::string_view native, bool still_open, std::string_view where,
                              std::string_view secret);

class DriverConnection : public Connection {
 public:
  using Connection::execute;
  // Runs the statement through run_statement() with the bookkeeping described above.
  Result execute(std::string_view sql, std::span<const Value> params) final;
  void begin() final;
  void commit() final;
  void rollback() noexcept final;
  // False once the server ended the transaction, although rollback() is still due.
  bool in_transaction() const noexcept final;
  bool broken() const noexcept final;

 protected:
  // `where` names the server ("PostgreSQL 127.0.0.1:5432/app"); `secret` (the password, if
  // known) is scrubbed from the messages of the driver's errors.
  DriverConnection(std::string where, std::string secret);

  const std::string& where() const noexcept { return where_; }
  const std::string& secret() const noexcept { return secret_; }

  // Primitive: sends one statement (or a script without parameters) and returns its rows.
  // Failures are thrown as a classified dblock::Error (kConnectionLost when the connection went).
  virtual Result run_statement(std::string_view sql, std::span<const Value> params) = 0;

  // Primitive: whether the native handle is still open, as far as the client library can tell
  // without asking the server. broken() is true once this is false.
  virtual bool native_open() const noexcept { return true; }

  // Hook: after a statement run inside the open transaction (`failure` is its error, or nullptr
  // when it succeeded), whether the server ended the transaction on its own. MySQL drivers ask
  // the server status; PostgreSQL never ends a transaction by itself (it fails it instead).
  virtual bool server_ended_transaction(const Error* failure) noexcept;

  // Hook: whether the open transaction has failed, so that the server would answer COMMIT with
  // a rollback. By default: on PostgreSQL, a statement failed inside the transaction and none
  // succeeded since (only ROLLBACK [TO SAVEPOINT] succeeds there); never on MySQL, where a
  // failed statement leaves the transaction open. A driver that can read the session's own
  // transaction status overrides this.
  virtual bool transaction_failed() const noexcept;

  // Hook: after a statement succeeded, whether the server made its commit doubtful (PostgreSQL
  // warns when its wait for a synchronous standby was cancelled). A driver that watches the
  // server's notices resets what it saw at the start of each run_statement().
  virtual bool commit_in_doubt() noexcept;

  // True in a process other than the one that opened the connection (a forked child).
  bool opened_elsewhere() const noexcept;
  // In a forked child: points the socket's descriptor at /dev/null, in this process only, so
  // that nothing the client library sends while closing reaches the parent's session. Drivers
  // call it first thing in their destructors. Does nothing in the process that opened the
  // connection.
  void disown_if_inherited() noexcept;

  // For a driver's own calls outside execute(): throws `err`, first marking the connection
  // broken when `err` says it was lost.
  [[noreturn]] void fail(Error err);
  // The same for a failed statement: also records the failure in the open transaction.
  [[noreturn]] void fail_statement(Error err);

 private:
  void note_failure(const Error& err) noexcept;
  void mark_lost() noexcept;
  // Sends ROLLBACK unless the connection is broken; a failure marks it broken.
  void roll_back_now() noexcept;

  std::string where_;
  std::string secret_;
  pid_t opened_in_;  // the process that opened the connection
  bool in_transaction_ = false;
  bool statement_failed_ = false;  // a statement failed inside the open transaction
  bool ended_ = false;             // the server ended the open transaction
  bool broken_ = false;
};

}  // namespace dblock::detail

#pragma GCC visibility pop
