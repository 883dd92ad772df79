// SPDX-License-Identifier: Apache-2.0
// A throughput comparison of dblock against its raw baseline at one connection count, in pairs of
// short rounds run back to back, raw first in one pair and dblock first in the next (raw dblock,
// dblock raw, raw dblock, ...), so that drift in the machine's load hits both sides alike.
// ratio = the median over the pairs of dblock throughput / raw throughput: a pair hit by a stall
// of the shared machine (a commit flush that takes ten times as long, another process's burst)
// moves a pooled ratio by several percent and the median hardly at all. The pooled ratio, over all
// rounds together, is kept beside it in the JSON.
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
  std::vector<double> round_ratios;  // one per pair, sorted
  double ratio() const;              // the median of round_ratios
  double pooled_ratio() const;       // over all rounds together
  // {"connections", "raw", "dblock", "ratio_dblock_vs_raw", "ratio_dblock_vs_raw_per_round",
  //  "ratio_dblock_vs_raw_pooled"}
  nlohmann::json to_json();
};

// Runs settings.rounds pairs of rounds of settings.round_duration on `connections` threads (each
// round after a warm-up of its own); make_raw(i) and make_dblock(i) build thread i's operation
// (see run_load).
Comparison compare(const Settings& settings, int connections,
                   const std::function<Operation(int)>& make_raw,
                   const std::function<Operation(int)>& make_dblock);

// {"p50_ms", "p99_ms", "mean_ms", "samples", "ops_per_s", "ops", "seconds", "cpu_us_per_op"}
nlohmann::json load_figures(LoadResult& r);

// The ratio as a headline with the design's target (>= 0.95 of the raw baseline).
void ratio_headline(BenchContext& ctx, const std::string& label, double ratio);
// A ratio as a headline with no target: listed with the ratios, for information.
void untargeted_ratio_headline(BenchContext& ctx, const std::string& label, double ratio);
// A contended run's acquire wait p99 with polling only over the same with release
// notifications (each {"acquire_wait": {"p99_ms": ...}}), as a headline with the target >= 5.
void wake_ratio_headline(BenchContext& ctx, const std::string& label,
                         const nlohmann::json& notified, const nlohmann::json& polled);

}  // namespace dblock::bench
