// SPDX-License-Identifier: Apache-2.0
// Whether the server has ended a transaction dblock began on a MYSQL connection, for the drivers
// that hold one (libmysqlclient and SOCI's MySQL backend). InnoDB ends a transaction on its own:
// a deadlock rolls the whole transaction back, so does a lock wait timeout under
// innodb_rollback_on_timeout, and DDL or LOCK TABLES commit it implicitly. The lock the
// transaction held is gone then, and later statements would run in autocommit, unprotected: the
// drivers refuse them (transaction_ended_error(), driver_connection.hpp) until the transaction is
// rolled back.
// Header-only: each driver target compiles it against its own client headers. Internal.
//
// Thread-safety: as the connection (one thread at a time).
#pragma once

#include <mysql.h>

#include "dblock/error.hpp"

namespace dblock::detail {

// After a statement run inside the transaction: `failure` is its error, or nullptr when it
// succeeded. An error packet carries no status flags, so a lock wait timeout asks with a ping.
inline bool mysql_transaction_ended(MYSQL* conn, const Error* failure) noexcept {
  if (failure == nullptr) return (conn->server_status & SERVER_STATUS_IN_TRANS) == 0;
  switch (failure->code()) {
    case ErrorCode::kDeadlock:
    case ErrorCode::kSerializationFailure:
      return true;
    case ErrorCode::kLockWaitTimeout:
      return mysql_ping(conn) == 0 && (conn->server_status & SERVER_STATUS_IN_TRANS) == 0;
    default:
      return false;
  }
}

}  // namespace dblock::detail
