// SPDX-License-Identifier: Apache-2.0
// Relaxed durability (UniqueKeyLockOptions::relaxed_durability) against the durable default and
// against native advisory locks: uncontended acquire + release at 1 and 8 connections, in
// pairs of rounds (compare.hpp), and the hot-key handoff. PostgreSQL only: on MySQL/MariaDB the
// option does nothing (InnoDB's flush-at-commit setting is global), which the JSON says.
#include "../bench.hpp"
#include "../compare.hpp"
#include "../hot_key.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

double native_rate(BenchContext& ctx, int connections) {
  if (!ctx.out().contains("native_locks")) return 0;
  for (const auto& p : ctx.out()["native_locks"]["uncontended"]) {
    if (p["connections"] == connections) return p["ops_per_s"].get<double>();
  }
  return 0;
}

void run(BenchContext& ctx) {
  if (!ctx.postgresql()) {
    ctx.out()["relaxed_durability"] = {
        {"what",
         "not measured: the option has no effect on MySQL/MariaDB, where "
         "innodb_flush_log_at_trx_commit is a global setting only"}};
    return;
  }
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("relaxed vs durable acquire+release, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock durable(*pool, {.tables = tables.names()});
    UniqueKeyLock relaxed(*pool, {.tables = tables.names(), .relaxed_durability = true});
    auto op = [](UniqueKeyLock& lock) {
      return [&lock](int) -> Operation {
        return [&lock] {
          auto lease = lock.try_acquire(random_key("d:"));
          if (!lease) return false;
          lease->release();
          return true;
        };
      };
    };
    // The durable lock as the baseline side, the relaxed one as the side measured against it.
    Comparison cmp = compare(s, c, op(durable), op(relaxed));
    const LoadResult& r = cmp.dblock;
    nlohmann::json j{{"connections", c},
                     {"durable", load_figures(cmp.raw)},
                     {"relaxed", load_figures(cmp.dblock)},
                     {"ratio_relaxed_vs_durable", cmp.ratio()},
                     {"ratio_relaxed_vs_durable_per_round", cmp.round_ratios}};
    ctx.headline({.label = "relaxed/durable acquire+release, " + std::to_string(c) + " conn",
                  .value = j["ratio_relaxed_vs_durable"].get<double>(),
                  .unit = "x",
                  .ratio = true});
    if (double native = native_rate(ctx, c); native > 0) {
      j["ratio_relaxed_vs_advisory"] = r.per_second() / native;
      ctx.headline({.label = "relaxed/advisory acquire+release, " + std::to_string(c) + " conn",
                    .value = j["ratio_relaxed_vs_advisory"].get<double>(),
                    .unit = "x",
                    .ratio = true});
    }
    points.push_back(std::move(j));
  }

  nlohmann::json hot = nlohmann::json::array();
  for (int clients : s.hot_clients) {
    ctx.progress("hot key, relaxed, " + std::to_string(clients) + " clients");
    HotKeyResult r = measure_hot_key(ctx, tables.names(), clients, {.relaxed_durability = true});
    nlohmann::json j = r.to_json("notify+relaxed", clients);
    if (clients == s.hot_clients.front()) {
      double p50 = j["handoff"]["p50_ms"].get<double>();
      ctx.headline(
          {.label = "hot key handoff p50, notify+relaxed, " + std::to_string(clients) + " clients",
           .value = p50,
           .unit = "ms",
           .target = "< 2 ms",
           .met = p50 < 2.0 ? 1 : 0});
    }
    hot.push_back(j);
    if (ctx.out().contains("hot_key")) ctx.out()["hot_key"]["points"].push_back(j);
  }
  ctx.out()["relaxed_durability"] = {
      {"what",
       "UniqueKeyLockOptions::relaxed_durability (synchronous_commit = off for the lock "
       "statements' own transactions) against the durable default and advisory locks"},
      {"uncontended", points},
      {"hot_key", hot}};
}

DBLOCK_BENCH_SCENARIO("relaxed_durability", 45, run);

}  // namespace
}  // namespace dblock::bench
