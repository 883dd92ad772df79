// SPDX-License-Identifier: Apache-2.0
// A Connection that passes every call to the one it wraps, for tests that observe or delay some
// statements (they override execute()). Server-specific calls (server(), the socket,
// notifications) are not forwarded: a wrapped connection is used for lock statements only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "dblock/connection.hpp"

namespace dblock::testing {

class ForwardingConnection : public Connection {
 public:
  explicit ForwardingConnection(std::unique_ptr<Connection> inner) : inner_(std::move(inner)) {}

  Dialect dialect() const noexcept override { return inner_->dialect(); }
  Result execute(std::string_view sql, std::span<const Value> params) override {
    return inner_->execute(sql, params);
  }
  void begin() override { inner_->begin(); }
  void commit() override { inner_->commit(); }
  void rollback() noexcept override { inner_->rollback(); }
  bool in_transaction() const noexcept override { return inner_->in_transaction(); }
  bool broken() const noexcept override { return inner_->broken(); }
  std::string describe() const override { return inner_->describe(); }

 protected:
  Connection& inner() { return *inner_; }

 private:
  std::unique_ptr<Connection> inner_;
};

}  // namespace dblock::testing
