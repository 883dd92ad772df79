// The hot-key measurement, shared by the hot-key scenario and the relaxed-durability comparison.
//
// Thread-safety: measure_hot_key runs its own threads; call it from one thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench.hpp"
#include "dblock/unique_key_lock.hpp"
#include "load.hpp"
#include "lock_sql.hpp"

namespace dblock::bench {

struct HotKeyResult {
  LoadResult load;    // ops = successful acquisitions in the window; per-thread counts
  Latencies handoff;  // microseconds
  double statements_per_acquisition = 0;
  nlohmann::json to_json(const std::string& mode, int clients);
};

// `clients` threads contend for one fresh key of `tables` with blocking acquire, each on a pool
// of `clients` connections.
HotKeyResult measure_hot_key(BenchContext& ctx, const TableNames& tables, int clients,
                             UniqueKeyLockOptions options);

}  // namespace dblock::bench
