// SPDX-License-Identifier: Apache-2.0
// Clients contending for one key across the nodes of a cluster, each recording its history
// (tests/faults/history.hpp), while the test injects its faults. Client i connects to urls[i %
// urls.size()] through a pool of its own (every other client on a node through SOCI, the rest
// through the dialect's own driver) and loops: acquire (waiting up to 200 ms), the critical
// section (transactional strategies: increment the resource counter in the lease's
// transaction), a short pause, release. Every dblock::Error is counted by where it was thrown
// (acquire, critical section, release) and code, and the client goes on after 50 ms.
//
// Thread-safety: run_contention is called from one thread; it runs the clients on threads of
// its own and returns once they all stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dblock/table_names.hpp"
#include "history.hpp"
#include "strategies.hpp"

namespace dblock::testing {

struct ContentionOptions {
  const StrategyUnderTest* strategy = nullptr;
  std::vector<std::string> urls;
  int clients = 6;
  TableNames tables;
  std::string key = "ha-key";
  std::chrono::milliseconds ttl{3000};
  std::string history_dir;  // one file per client
  // Optional: a URL for a client whose lease stays held for the whole run, renewed every TTL/3
  // (its history shows whether renewals carried on through the faults).
  std::string long_holder_url;
};

struct ContentionStats {
  long acquired = 0;
  long released = 0;  // release outcome "released" (optimistic: committed)
  long decremented = 0;
  long not_held = 0;
  long conflicts = 0;
  long in_doubt = 0;  // releases that threw: their commit may or may not have happened
  // "<where>:<error code>" -> count, where is acquire, section or release.
  std::map<std::string, long> errors;
  std::vector<std::string> histories;
  // The long holder (when asked for): renewals that succeeded and whether it was found lost.
  long long_holder_renewals = 0;
  bool long_holder_lost = false;
  std::int64_t long_holder_token = 0;

  long errors_at(const std::string& where, const std::string& code) const;
  long errors_total() const;
  std::string summary() const;
};

// Starts the clients, calls during() on this thread, stops the clients when it returns.
ContentionStats run_contention(const ContentionOptions& options,
                               const std::function<void()>& during);

// The history check that fits the strategy: mutual exclusion and growing tokens (exclusive
// strategies), or no version committed twice (optimistic).
HistoryReport check_history(const ContentionOptions& options, const ContentionStats& stats);

// Creates dblock's tables under options.tables and the resource table (row 1, counter 0)
// through `url`.
void prepare_tables(const std::string& url, const TableNames& tables);

}  // namespace dblock::testing
