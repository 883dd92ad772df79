// SPDX-License-Identifier: Apache-2.0
#include "cut_off_holder.hpp"

#include <thread>

namespace dblock::testing {

CutOffHolder::CutOffHolder(const DatabaseUrl& url, const StrategyUnderTest& strategy,
                           const TableNames& tables, std::unique_ptr<Lock> direct_lock,
                           const std::string& history_path, std::chrono::milliseconds ttl)
    : network(url, {.max_size = 2}, strategy, tables),
      direct(std::move(direct_lock)),
      history(history_path),
      holder(*network.lock, history, "cut-off", "k", ttl),
      taker(*direct, history, "taker", "k", std::chrono::milliseconds(30000)),
      ttl_(ttl) {}

void CutOffHolder::blackhole() {
  std::this_thread::sleep_for(ttl_ / 2);
  network.proxy.set_blackhole(true);
}

}  // namespace dblock::testing
