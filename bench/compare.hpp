// A throughput comparison of dblock against its raw baseline at one connection count: alternating
// rounds (raw, dblock, raw, dblock, ...) so drift in the machine's load hits both alike.
// ratio = dblock throughput / raw throughput, over all rounds together.
//
// Thread-safety: compare() runs its own threads; call it from one thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.hpp"
#include "load.hpp"

namespace dblock::bench {

struct Comparison {
  int connections = 0;
  LoadResult raw, dblock;
  std::vector<double> round_ratios;  // sorted
  double ratio() const;
  // {"connections", "raw", "dblock", "ratio_dblock_vs_raw", "ratio_dblock_vs_raw_per_round"}
  nlohmann::json to_json();
};

// Runs settings.rounds rounds of each side on `connections` threads; make_raw(i) and
// make_dblock(i) build thread i's operation (see run_load).
Comparison compare(const Settings& settings, int connections,
                   const std::function<Operation(int)>& make_raw,
                   const std::function<Operation(int)>& make_dblock);

// {"p50_ms", "p99_ms", "mean_ms", "samples", "ops_per_s", "ops", "seconds"}
nlohmann::json load_figures(LoadResult& r);

// The ratio as a headline with the design's target (>= 0.95 of the raw baseline).
void ratio_headline(BenchContext& ctx, const std::string& label, double ratio);

}  // namespace dblock::bench
