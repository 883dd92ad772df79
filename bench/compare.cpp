#include "compare.hpp"

#include <algorithm>

namespace dblock::bench {

namespace {

void add(LoadResult& total, const LoadResult& round) {
  total.ops += round.ops;
  total.seconds += round.seconds;
  total.latency.merge(round.latency);
}

}  // namespace

double Comparison::ratio() const { return dblock.per_second() / std::max(raw.per_second(), 1e-9); }

nlohmann::json Comparison::to_json() {
  return {{"connections", connections},
          {"raw", load_figures(raw)},
          {"dblock", load_figures(dblock)},
          {"ratio_dblock_vs_raw", ratio()},
          {"ratio_dblock_vs_raw_per_round", round_ratios}};
}

Comparison compare(const Settings& settings, int connections,
                   const std::function<Operation(int)>& make_raw,
                   const std::function<Operation(int)>& make_dblock) {
  Comparison out;
  out.connections = connections;
  for (int round = 0; round < settings.rounds; ++round) {
    LoadResult a = run_load(connections, settings.duration, make_raw);
    LoadResult b = run_load(connections, settings.duration, make_dblock);
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
  return j;
}

void ratio_headline(BenchContext& ctx, const std::string& label, double ratio) {
  ctx.headline({.label = label,
                .value = ratio,
                .unit = "x",
                .target = ">= 0.95",
                .met = ratio >= 0.95 ? 1 : 0,
                .ratio = true});
}

}  // namespace dblock::bench
