// SPDX-License-Identifier: Apache-2.0
#include "compare.hpp"

#include <algorithm>

namespace dblock::bench {

namespace {

void add(LoadResult& total, const LoadResult& round) {
  total.ops += round.ops;
  total.seconds += round.seconds;
  total.cpu_seconds += round.cpu_seconds;
  total.latency.merge(round.latency);
}

}  // namespace

double Comparison::ratio() const {
  if (round_ratios.empty()) return 0;
  const std::size_t n = round_ratios.size();
  return (round_ratios[(n - 1) / 2] + round_ratios[n / 2]) / 2;
}

double Comparison::pooled_ratio() const {
  return dblock.per_second() / std::max(raw.per_second(), 1e-9);
}

nlohmann::json Comparison::to_json() {
  return {{"connections", connections},
          {"raw", load_figures(raw)},
          {"dblock", load_figures(dblock)},
          {"ratio_dblock_vs_raw", ratio()},
          {"ratio_dblock_vs_raw_per_round", round_ratios},
          {"ratio_dblock_vs_raw_pooled", pooled_ratio()}};
}

Comparison compare(const Settings& settings, int connections,
                   const std::function<Operation(int)>& make_raw,
                   const std::function<Operation(int)>& make_dblock) {
  Comparison out;
  out.connections = connections;
  constexpr std::chrono::milliseconds kWarmup{100};
  for (int pair = 0; pair < settings.rounds; ++pair) {
    LoadResult a, b;
    if (pair % 2 == 0) {
      a = run_load(connections, settings.round_duration, make_raw, kWarmup);
      b = run_load(connections, settings.round_duration, make_dblock, kWarmup);
    } else {
      b = run_load(connections, settings.round_duration, make_dblock, kWarmup);
      a = run_load(connections, settings.round_duration, make_raw, kWarmup);
    }
    out.round_ratios.push_back(b.per_second() / std::max(a.per_second(), 1e-9));
    add(out.raw, a);
    add(out.dblock, b);
  }
  std::sort(out.round_ratios.begin(), out.round_ratios.end());
  return out;
}

nlohmann::json load_figures(LoadResult& r) {
  nlohmann::json j = r.latency.summary_ms();
  j["ops_per_s"] = r.per_second();
  j["ops"] = r.ops;
  j["seconds"] = r.seconds;
  j["cpu_us_per_op"] = r.cpu_us_per_op();
  return j;
}

namespace {

// A ratio as a headline with the target "at least `least`".
void targeted_ratio_headline(BenchContext& ctx, const std::string& label, double ratio,
                             double least, const std::string& target) {
  ctx.headline({.label = label,
                .value = ratio,
                .unit = "x",
                .target = target,
                .met = ratio >= least ? 1 : 0,
                .ratio = true});
}

}  // namespace

void ratio_headline(BenchContext& ctx, const std::string& label, double ratio) {
  targeted_ratio_headline(ctx, label, ratio, 0.95, ">= 0.95");
}

void untargeted_ratio_headline(BenchContext& ctx, const std::string& label, double ratio) {
  ctx.headline({.label = label, .value = ratio, .unit = "x", .ratio = true});
}

void wake_ratio_headline(BenchContext& ctx, const std::string& label,
                         const nlohmann::json& notified, const nlohmann::json& polled) {
  const double woken = notified["acquire_wait"]["p99_ms"].get<double>();
  const double ratio = woken > 0 ? polled["acquire_wait"]["p99_ms"].get<double>() / woken : 0;
  targeted_ratio_headline(ctx, label, ratio, 5, ">= 5");
}

}  // namespace dblock::bench
