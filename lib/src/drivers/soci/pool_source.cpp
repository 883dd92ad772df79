// SPDX-License-Identifier: Apache-2.0
// soci_pool_source(): a ConnectionSource lending the sessions of the service's
// soci::connection_pool.
//
// acquire() leases a position from the pool (blocking while all are leased), wraps that session
// (one wrapper per position, kept while it works) and lends the wrapper; give_back() rolls back a
// transaction left open and returns the position to the pool. A wrapper that broke while lent
// is not lent again: the next acquire() of its position reconnects the session
// (soci::session::reconnect(), with the parameters the service opened it with) and wraps it
// afresh; if that fails, the position goes back to the pool and acquire() throws the classified
// connect error.
//
// Thread-safety: acquire() and give_back() may be called from any thread (soci's pool is
// thread-safe; the wrapper table is guarded by a mutex). A leased position belongs to one
// borrower, so its wrapper is only touched by that borrower.
#include <soci/soci.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dblock/soci.hpp"
#include "drivers/soci/errors.hpp"
#include "drivers/soci/session_info.hpp"

namespace dblock {
namespace {

class SociPoolSource final : public ConnectionSource {
 public:
  SociPoolSource(soci::connection_pool& pool, std::size_t size) : pool_(pool), slots_(size) {
    if (size == 0) {
      throw soci_driver::invalid_argument_error("SOCI pool", "the pool size must be at least 1");
    }
    try {
      pool_.at(size - 1);
    } catch (const std::exception&) {
      throw soci_driver::invalid_argument_error(
          "SOCI pool", "size " + std::to_string(size) + " is larger than the pool");
    }
    // The caller has not shared the source yet, so reading the first session here is safe.
    soci::session& first = pool_.at(0);
    dialect_ = soci_driver::dialect_of(first);
    description_ = "SOCI pool of " + std::to_string(size) + " sessions to " +
                   soci_driver::location_of(first, dialect_) + " (soci)";
  }

  Dialect dialect() const noexcept override { return dialect_; }

  PooledConnection acquire() override {
    std::size_t pos = pool_.lease();
    try {
      if (pos >= slots_.size()) {
        throw soci_driver::invalid_argument_error(
            description_, "the pool lent position " + std::to_string(pos) +
                              ", beyond the size given to soci_pool_source()");
      }
      std::unique_ptr<Connection>& slot = slots_[pos];
      soci::session& session = pool_.at(pos);
      if (slot != nullptr && slot->broken()) {
        slot.reset();
        try {
          session.reconnect();
        } catch (const std::exception& e) {
          throw soci_driver::connect_error(e, dialect_, description_, {});
        }
      }
      if (slot == nullptr) slot = wrap_soci(session);
      Connection* conn = slot.get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        positions_[conn] = pos;
      }
      return PooledConnection(this, conn);
    } catch (...) {
      pool_.give_back(pos);
      throw;
    }
  }

  std::string describe() const override { return description_; }

 protected:
  void give_back(Connection* conn) noexcept override {
    std::size_t pos = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = positions_.find(conn);
      if (it == positions_.end()) return;  // not ours; nothing to give back
      pos = it->second;
      positions_.erase(it);
    }
    conn->rollback();  // see PooledConnection::reset: also ends a transaction the server ended
    try {
      pool_.give_back(pos);
    } catch (...) {
      // Only fails for a position that is not leased, which cannot happen here.
    }
  }

 private:
  soci::connection_pool& pool_;
  Dialect dialect_ = Dialect::kPostgreSQL;
  std::string description_;
  // One wrapper per pool position; slots_[pos] is touched only by whoever leased pos.
  std::vector<std::unique_ptr<Connection>> slots_;
  std::mutex mu_;
  std::unordered_map<Connection*, std::size_t> positions_;  // lent wrappers
};

}  // namespace

std::unique_ptr<ConnectionSource> soci_pool_source(soci::connection_pool& pool, std::size_t size) {
  return std::make_unique<SociPoolSource>(pool, size);
}

}  // namespace dblock
