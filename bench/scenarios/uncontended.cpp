// Uncontended acquire + release on random keys: dblock's UniqueKeyLock against the identical
// statements sent by a raw client loop, at the same connection count, in alternating rounds
// (raw, dblock, raw, dblock, ...) so drift in the machine's load hits both alike.
// ratio = dblock throughput / raw throughput.
#include <algorithm>

#include "../bench.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

constexpr std::int64_t kTtlMs = 30'000;

Operation raw_operation(const Target& target, const LockSql& sql) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, owner] {
    std::string key = random_key("u:");
    RawResult r =
        client->execute(sql.acquire, sql.acquire_params(key, random_key(""), owner, kTtlMs));
    std::int64_t token = sql.dialect == Dialect::kPostgreSQL
                             ? (r.has_row ? r.first : 0)
                             : static_cast<std::int64_t>(r.insert_id);
    if (token == 0) return false;
    client->execute(sql.release, sql.release_params(key, owner, token));
    return true;
  };
}

Operation dblock_operation(UniqueKeyLock& lock) {
  return [&lock] {
    auto lease = lock.try_acquire(random_key("u:"));
    if (!lease) return false;
    lease->release();
    return true;
  };
}

nlohmann::json figures(LoadResult& r) {
  nlohmann::json j = r.latency.summary_ms();
  j["ops_per_s"] = r.per_second();
  j["ops"] = r.ops;
  j["seconds"] = r.seconds;
  return j;
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  LockSql sql(ctx.dialect(), tables.names());
  nlohmann::json points = nlohmann::json::array();
  for (int c : s.connections) {
    ctx.progress("uncontended acquire+release, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    LoadResult raw, lib;
    std::vector<double> round_ratios;
    for (int round = 0; round < s.rounds; ++round) {
      LoadResult a = run_load(c, s.duration, [&](int) { return raw_operation(ctx.target(), sql); });
      LoadResult b = run_load(c, s.duration, [&](int) { return dblock_operation(lock); });
      round_ratios.push_back(b.per_second() / std::max(a.per_second(), 1e-9));
      raw.ops += a.ops;
      raw.seconds += a.seconds;
      raw.latency.merge(a.latency);
      lib.ops += b.ops;
      lib.seconds += b.seconds;
      lib.latency.merge(b.latency);
    }
    double ratio = lib.per_second() / std::max(raw.per_second(), 1e-9);
    std::sort(round_ratios.begin(), round_ratios.end());
    points.push_back({{"connections", c},
                      {"raw", figures(raw)},
                      {"dblock", figures(lib)},
                      {"ratio_dblock_vs_raw", ratio},
                      {"ratio_dblock_vs_raw_per_round", round_ratios}});
    if (c == 1 || c == 8) {
      ctx.headline({.label = "dblock/raw acquire+release, " + std::to_string(c) + " conn",
                    .value = ratio,
                    .unit = "x",
                    .target = ">= 0.95",
                    .met = ratio >= 0.95 ? 1 : 0,
                    .ratio = true});
    }
  }
  ctx.out()["uncontended"] = {
      {"what",
       "try_acquire + release of a fresh random key per operation; raw = the same two rendered "
       "statements and parameters from a plain client loop; ops_per_s counts acquire+release "
       "pairs; latency is of the pair"},
      {"points", points}};
}

DBLOCK_BENCH_SCENARIO("uncontended", 10, run);

}  // namespace
}  // namespace dblock::bench
