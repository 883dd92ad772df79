// SPDX-License-Identifier: Apache-2.0
// Acquire latency against the number of rows in the lock table: 1 thousand, 1 million and
// 10 million rows (held by other owners), filled in the server and grown in place; at each size
// one connection acquires and releases fresh random keys. The fill time is reported too.
#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "../bench.hpp"
#include "../fill.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

std::string rows_label(std::int64_t rows) {
  if (rows >= 1'000'000) return std::to_string(rows / 1'000'000) + "M";
  if (rows >= 1'000) return std::to_string(rows / 1'000) + "k";
  return std::to_string(rows);
}

nlohmann::json run(BenchContext& ctx) {
  using Clock = std::chrono::steady_clock;
  ScopedTables tables(ctx.target().url);
  auto pool = ctx.pool(1);
  UniqueKeyLock lock(*pool, {.tables = tables.names()});
  nlohmann::json points = nlohmann::json::array();
  std::int64_t filled = 0;
  double first_p50 = 0;
  for (std::int64_t rows : ctx.settings().table_rows) {
    ctx.progress("filling the lock table to " + rows_label(rows) + " rows");
    double fill_s = fill_lock_rows(ctx.target().url, tables.connection(), tables.names(),
                                   "fill:", filled, rows - filled, 86400);
    double fill_rows = static_cast<double>(rows - filled);
    filled = rows;
    // Fresh statistics, as autovacuum / InnoDB would have after a while.
    tables.connection().execute(std::string(ctx.postgresql() ? "ANALYZE " : "ANALYZE TABLE ") +
                                tables.names().qualified(ctx.dialect(), "locks"));
    ctx.progress("acquire latency at " + rows_label(rows) + " rows");
    std::vector<std::pair<Clock::time_point, double>> samples;
    LoadResult r = run_load(1, ctx.settings().duration, [&](int) -> Operation {
      return [&] {
        auto t0 = Clock::now();
        auto lease = lock.try_acquire(random_key("s:"));
        auto t1 = Clock::now();
        if (!lease) return false;
        samples.emplace_back(t0, std::chrono::duration<double, std::micro>(t1 - t0).count());
        lease->release();
        return true;
      };
    });
    Latencies acquire;
    for (auto [when, us] : samples) {
      if (when >= r.started) acquire.add(us);
    }
    // A busy try on a random key held by another owner: the lookup alone (no write, no flush).
    Latencies busy;
    std::mt19937_64 rng{std::random_device{}()};
    const auto busy_until = Clock::now() + ctx.settings().duration / 2;
    while (Clock::now() < busy_until) {
      char key[32];
      std::snprintf(key, sizeof key, "fill:%010lld",
                    static_cast<long long>(rng() % static_cast<std::uint64_t>(rows)));
      auto t0 = Clock::now();
      if (lock.try_acquire(key))
        throw std::runtime_error("a filled row was free: " + std::string(key));
      busy.add(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    nlohmann::json j{{"rows", rows},
                     {"fill_seconds", fill_s},
                     {"fill_rows_per_s", fill_s > 0 ? fill_rows / fill_s : 0},
                     {"acquire", acquire.summary_ms()},
                     {"busy_try", busy.summary_ms()},
                     {"acquire_release_per_s", r.per_second()}};
    double p50 = j["acquire"]["p50_ms"].get<double>();
    if (points.empty()) first_p50 = p50;
    if (!points.empty() && first_p50 > 0) {
      std::string name =
          "ratio_acquire_p50_vs_" + rows_label(points[0]["rows"].get<std::int64_t>());
      j[name] = p50 / first_p50;
      bool last = rows == ctx.settings().table_rows.back();
      ctx.headline({.label = "acquire p50 at " + rows_label(rows) + " / at " +
                             rows_label(points[0]["rows"].get<std::int64_t>()) + " rows",
                    .value = j[name].get<double>(),
                    .unit = "x",
                    .target = last && rows >= 10'000'000 ? "<= 1.2" : "",
                    .met = last && rows >= 10'000'000 ? (j[name].get<double>() <= 1.2 ? 1 : 0) : -1,
                    .ratio = true});
    }
    if (!points.empty()) {
      double base = points[0]["busy_try"]["p50_ms"].get<double>();
      double now = j["busy_try"]["p50_ms"].get<double>();
      std::string name =
          "ratio_busy_try_p50_vs_" + rows_label(points[0]["rows"].get<std::int64_t>());
      j[name] = base > 0 ? now / base : 0;
      ctx.headline({.label = "busy try p50 at " + rows_label(rows) + " / at " +
                             rows_label(points[0]["rows"].get<std::int64_t>()) + " rows",
                    .value = j[name].get<double>(),
                    .unit = "x",
                    .ratio = true});
    }
    ctx.headline(
        {.label = "acquire p50 at " + rows_label(rows) + " rows", .value = p50, .unit = "ms"});
    ctx.headline({.label = "busy try p50 at " + rows_label(rows) + " rows",
                  .value = j["busy_try"]["p50_ms"].get<double>(),
                  .unit = "ms"});
    ctx.headline({.label = "acquire p99 at " + rows_label(rows) + " rows",
                  .value = j["acquire"]["p99_ms"].get<double>(),
                  .unit = "ms"});
    ctx.headline({.label = "fill to " + rows_label(rows) + " rows", .value = fill_s, .unit = "s"});
    points.push_back(std::move(j));
  }
  return points;
}

DBLOCK_BENCH_SCENARIO(
    "table_size", 50, run,
    "try_acquire latency of a fresh random key (one connection) with N rows held by "
    "other owners in the lock table; fill = server-side INSERT ... SELECT");

}  // namespace
}  // namespace dblock::bench
