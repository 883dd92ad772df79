// SPDX-License-Identifier: Apache-2.0
#include "counting_source.hpp"

namespace dblock::bench {

class CountingSource::Counted final : public Connection {
 public:
  Counted(Connection& inner, std::atomic<std::uint64_t>& count) : inner_(inner), count_(count) {}
  Dialect dialect() const noexcept override { return inner_.dialect(); }
  Result execute(std::string_view sql, std::span<const Value> params) override {
    count_.fetch_add(1, std::memory_order_relaxed);
    return inner_.execute(sql, params);
  }
  void begin() override {
    count_.fetch_add(1, std::memory_order_relaxed);
    inner_.begin();
  }
  void commit() override {
    count_.fetch_add(1, std::memory_order_relaxed);
    inner_.commit();
  }
  void rollback() noexcept override { inner_.rollback(); }
  bool in_transaction() const noexcept override { return inner_.in_transaction(); }
  bool broken() const noexcept override { return inner_.broken(); }
  bool supports_notifications() const noexcept override { return inner_.supports_notifications(); }
  void listen(std::string_view channel) override { inner_.listen(channel); }
  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout) override {
    return inner_.wait_for_notifications(timeout);
  }
  std::string describe() const override { return inner_.describe(); }
  Connection& inner() { return inner_; }

 private:
  Connection& inner_;
  std::atomic<std::uint64_t>& count_;
};

CountingSource::CountingSource(ConnectionSource& inner) : inner_(inner) {}

CountingSource::~CountingSource() {
  std::lock_guard lock(mu_);
  loans_.clear();
  wrappers_.clear();
}

PooledConnection CountingSource::acquire() {
  PooledConnection loan = inner_.acquire();
  Connection* inner = loan.get();
  std::lock_guard lock(mu_);
  auto& wrapper = wrappers_[inner];
  if (!wrapper) wrapper = std::make_unique<Counted>(*inner, statements_);
  Counted* out = wrapper.get();
  loans_[out] = std::move(loan);
  return PooledConnection(this, out);
}

void CountingSource::give_back(Connection* conn) noexcept {
  PooledConnection loan;
  {
    std::lock_guard lock(mu_);
    auto it = loans_.find(conn);
    if (it == loans_.end()) return;
    loan = std::move(it->second);
    loans_.erase(it);
    // A broken connection is dropped by the inner pool: forget its wrapper too.
    if (loan->broken()) wrappers_.erase(loan.get());
  }
  // `loan` gives the inner connection back here, outside the lock.
}

}  // namespace dblock::bench
