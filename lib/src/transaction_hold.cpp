// SPDX-License-Identifier: Apache-2.0
#include "transaction_hold.hpp"

#include "dblock/error.hpp"
#include "socket_probes.hpp"

namespace dblock::detail {

bool TransactionHold::broken() const noexcept {
  return conn_->broken() || peer_ended_session(conn_->native_socket(), conn_->dialect());
}

Error TransactionHold::lost_before_commit(std::string_view cause) const {
  std::string message = "the connection holding '" + key_ +
                        "' was lost before the commit: the server rolled its transaction back "
                        "(the critical section's writes are not committed) and freed the lock; "
                        "acquire again to redo the work";
  if (!cause.empty()) message.append(" (").append(cause).append(")");
  return Error(ErrorCode::kLeaseLost, message);
}

void TransactionHold::commit() {
  if (broken()) throw lost_before_commit({});
  try {
    conn_->commit();
  } catch (const Error& e) {
    conn_->rollback();
    if (e.code() == ErrorCode::kConnectionLost) {
      throw Error(ErrorCode::kCommitInDoubt,
                  "the connection holding '" + key_ +
                      "' was lost while the commit was on its way: the critical section's "
                      "writes may or may not be committed; read them before redoing the work (" +
                      e.what() + ")");
    }
    throw;
  }
}

bool TransactionHold::alive() {
  if (conn_->broken()) return false;
  try {
    conn_->execute("SELECT 1");
    return true;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kConnectionLost) return false;
    throw;
  }
}

}  // namespace dblock::detail
