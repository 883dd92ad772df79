// SPDX-License-Identifier: Apache-2.0
// The hot-key measurement, shared by the hot-key scenario and the relaxed-durability comparison.
//
// Thread-safety: measure_hot_key runs its own threads; call it from one thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench.hpp"
#include "dblock/lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "load.hpp"
#include "lock_sql.hpp"

namespace dblock::bench {

struct HotKeyResult {
  LoadResult load;    // ops = grants inside the measured window; ops_per_thread likewise
  Latencies handoff;  // microseconds, to another client (a holder re-taking the key is no handoff)
  double reacquired = 0;  // share of grants that went straight back to the previous holder
  Latencies release;  // the release call alone: handoff minus this is wake-up plus the winning try
  double statements_per_acquisition = 0;
  nlohmann::json to_json(const std::string& mode, int clients);
};

// Records when each client got the key and when holders start releasing. Grants are counted by
// the time they happen, not by when the client started waiting: under contention a wait can
// start long before the measured window.
class GrantLog {
 public:
  explicit GrantLog(int clients) : grants_(clients), releases_(clients) {}
  // Client `i` holds the key now; it asked at `asked`. A grant to a client that asked only after
  // the last release started is no handoff: the client never waited for it.
  void granted(int i, std::chrono::steady_clock::time_point asked);
  // Client `i`, holding the key, is about to release; then done releasing.
  std::chrono::steady_clock::time_point releasing();
  void released(int i, std::chrono::steady_clock::time_point started);
  // `load` with its counts replaced by the grants inside its window, and the handoffs there.
  HotKeyResult summarize(LoadResult load) const;

 private:
  // Per client: grant time and the handoff that led to it (microseconds; -1 when unknown or the
  // client did not wait, -2 when the client had held the key just before).
  std::vector<std::vector<std::pair<std::chrono::steady_clock::time_point, double>>> grants_;
  std::atomic<std::int64_t> release_started_{0};  // steady clock, ns
  std::atomic<int> holder_{-1};                   // the client that held the key last
  // Per client: when its release ended and how long it took (microseconds).
  std::vector<std::vector<std::pair<std::chrono::steady_clock::time_point, double>>> releases_;
};

// How the clients of a hot key behave.
struct HotKeyShape {
  // After each release a client sleeps this long (its work elsewhere) before it asks again; with
  // 0 it asks again at once and races its own waiters.
  std::chrono::microseconds between_holds{};
  // Each client has a lock object of its own, as clients in separate processes would: nothing
  // in one client's lock learns of another's releases except through the server.
  bool lock_per_client = false;
  // How long to measure (0: the run's --duration-ms).
  std::chrono::milliseconds duration{};
};

// `clients` threads contend for one fresh key of `tables` with blocking acquire, each on a pool
// of `clients` connections.
HotKeyResult measure_hot_key(BenchContext& ctx, const TableNames& tables, int clients,
                             UniqueKeyLockOptions options, HotKeyShape shape = {});

// The same for any strategy: make_lock builds it on the (counting) pool. With `prime`, the key is
// acquired and released once before the run, so a row the strategy creates on first use exists
// before anything is counted.
HotKeyResult measure_hot_key(
    BenchContext& ctx, int clients,
    const std::function<std::unique_ptr<Lock>(ConnectionSource&)>& make_lock, bool prime,
    HotKeyShape shape = {});

}  // namespace dblock::bench
