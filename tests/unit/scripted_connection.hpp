// SPDX-License-Identifier: Apache-2.0
// A Connection for unit tests of lock strategies without a database: it records the statements
// and parameters a strategy sends and answers each as the test scripts it (a row, an error), as
// the server named would.
//
//   ScriptedConnection conn(Server::kPostgreSQL);
//   conn.answer = [](const std::string&) { return token("7"); };  // every lock granted
//   auto source = borrow(conn);
//   SessionLock locks(*source);
//
// Thread-safety: none; one test thread at a time.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"

namespace dblock {

// Sends nothing anywhere: `answer` answers every statement, and `sent` records it.
class ScriptedConnection final : public Connection {
 public:
  struct Sent {
    std::string sql;
    std::vector<Value> params;
  };

  explicit ScriptedConnection(Server server) : server_(server) {}
  Dialect dialect() const noexcept override { return dialect_of(server_); }
  Server server() const noexcept override { return server_; }
  Result execute(std::string_view sql, std::span<const Value> params) override {
    sent.push_back({std::string(sql), {params.begin(), params.end()}});
    return answer(sent.back().sql);
  }
  void begin() override {}
  void commit() override {}
  void rollback() noexcept override {}
  bool in_transaction() const noexcept override { return false; }
  bool broken() const noexcept override { return false; }
  std::string describe() const override { return "scripted"; }

  // The statements sent that contain `fragment`.
  std::vector<Sent> sent_with(std::string_view fragment) const {
    std::vector<Sent> out;
    for (const Sent& s : sent) {
      if (s.sql.find(fragment) != std::string::npos) out.push_back(s);
    }
    return out;
  }

  // Answers every statement (or throws); by default: not a Galera node, the lock busy (a NULL
  // fencing token).
  std::function<Result(const std::string&)> answer = [](const std::string& sql) {
    if (sql.find("wsrep") != std::string::npos) return Result({"v"}, {{"OFF"}}, 1);
    return Result({"fencing_token"}, {{std::nullopt}}, 1);
  };
  std::vector<Sent> sent;

 private:
  Server server_;
};

// A row with `text` as its fencing token: the lock granted.
inline Result token(std::string text) { return Result({"fencing_token"}, {{std::move(text)}}, 1); }

}  // namespace dblock
