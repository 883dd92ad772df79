#include "transaction_hold.hpp"

#include "dblock/error.hpp"
#include "driver_support.hpp"

namespace dblock::detail {

bool TransactionHold::broken() const noexcept {
  return conn_->broken() || peer_closed(conn_->native_socket());
}

void TransactionHold::commit() {
  if (broken()) {
    throw Error(ErrorCode::kConnectionLost,
                "the connection holding '" + key_ +
                    "' was lost before the release: the server rolled its transaction back "
                    "(the critical section's writes are not committed) and freed the lock");
  }
  try {
    conn_->commit();
  } catch (const Error& e) {
    conn_->rollback();
    if (e.code() == ErrorCode::kConnectionLost) {
      throw Error(ErrorCode::kConnectionLost,
                  "the connection holding '" + key_ +
                      "' was lost during the commit: the critical section's writes may or may "
                      "not be committed; check them before retrying (" +
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
