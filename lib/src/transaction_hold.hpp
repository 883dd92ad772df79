// SPDX-License-Identifier: Apache-2.0
// A connection on loan for the life of a transactional lease (row lock, optimistic), with the
// transaction the critical section runs in. Shared by the transactional strategies. Internal.
//
// Thread-safety: used by one thread at a time (the lease's).
#pragma once

#include <string>
#include <string_view>

#include "dblock/connection_source.hpp"
#include "dblock/error.hpp"

namespace dblock::detail {

class TransactionHold {
 public:
  TransactionHold(PooledConnection conn, std::string key)
      : conn_(std::move(conn)), key_(std::move(key)) {}

  Connection& connection() const noexcept { return *conn_; }
  // True once the connection broke or the server ended the session (a killed session: the server
  // ended the transaction and with it the lock), noticed without a statement: on PostgreSQL as
  // soon as the server's FATAL error arrives, which it sends before it frees the session's locks
  // (the socket closes only after, when another owner may already hold the lock).
  bool broken() const noexcept;
  // True once the transaction is over without a commit of ours: the connection broke, or the
  // server ended the transaction (MySQL: a deadlock or lock wait timeout rolled it back, or a
  // statement committed implicitly). Its locks are gone either way.
  bool ended() const noexcept { return broken() || !conn_->in_transaction(); }

  // Commits. When the connection broke before the COMMIT was sent, throws Error(kLeaseLost): the
  // server rolled the transaction back and freed its locks. When it broke while the COMMIT was
  // on its way, throws Error(kCommitInDoubt): the server may or may not have committed. Any other
  // failure rolls back and rethrows.
  void commit();
  // The error for a connection lost before the COMMIT went out (a statement of the release, such
  // as the optimistic compare-and-set, lost its reply): kLeaseLost, `cause` appended.
  Error lost_before_commit(std::string_view cause) const;
  // Rolls back; never throws (a broken connection has nothing left to roll back).
  void rollback() noexcept { conn_->rollback(); }
  // One round trip on the connection: false when it is gone.
  bool alive();

 private:
  PooledConnection conn_;
  std::string key_;
};

}  // namespace dblock::detail
