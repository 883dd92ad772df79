// SPDX-License-Identifier: Apache-2.0
// A ConnectionSource that counts the statements sent through it: wraps another source and hands
// out connections that forward every call and count execute()s. Used to report statements per
// successful acquisition under contention; not used where throughput is compared with the raw
// baseline (the count would be overhead of the benchmark, not of dblock).
//
// Thread-safety: as any ConnectionSource.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "dblock/connection_source.hpp"

namespace dblock::bench {

class CountingSource final : public ConnectionSource {
 public:
  explicit CountingSource(ConnectionSource& inner);
  ~CountingSource() override;

  Dialect dialect() const noexcept override { return inner_.dialect(); }
  PooledConnection acquire() override;
  std::string describe() const override { return inner_.describe(); }
  // Dedicated sessions (the LISTEN session) are not counted: they are not lock statements.
  std::unique_ptr<Connection> open_dedicated() override { return inner_.open_dedicated(); }

  std::uint64_t statements() const noexcept { return statements_.load(); }
  void reset() noexcept { statements_.store(0); }

 protected:
  void give_back(Connection* conn) noexcept override;

 private:
  class Counted;
  ConnectionSource& inner_;
  std::atomic<std::uint64_t> statements_{0};
  std::mutex mu_;
  // The wrapper of each inner connection, and the inner loan while a wrapper is lent out.
  std::map<Connection*, std::unique_ptr<Counted>> wrappers_;
  std::map<Connection*, PooledConnection> loans_;
};

}  // namespace dblock::bench
