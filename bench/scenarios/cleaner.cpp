// SPDX-License-Identifier: Apache-2.0
// The cleaner: rows deleted per second from a table of expired rows (default batches, no grace),
// and the p99 of acquire + release by 4 clients on other keys while the cleaner runs, against
// the same load with the cleaner idle.
#include "dblock/cleaner.hpp"

#include <atomic>
#include <thread>

#include "../bench.hpp"
#include "../fill.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

constexpr int kClients = 4;

LoadResult acquire_load(BenchContext& ctx, UniqueKeyLock& lock) {
  return run_load(kClients, ctx.settings().duration, [&](int) -> Operation {
    return [&] {
      auto lease = lock.try_acquire(random_key("c:"));
      if (!lease) return false;
      lease->release();
      return true;
    };
  });
}

// PostgreSQL: refreshes the planner's statistics of the freshly filled table, as autovacuum would
// have done for a lock table in service. Without them, PostgreSQL underestimates the rows of a
// never-analysed table and plans each batch as a sequential scan and sort of the whole table
// instead of a range scan of the expires_at index (about 15,000 rows/s at 200,000 rows, falling
// as the table grows). InnoDB keeps its statistics up to date by itself.
void analyze(ScopedTables& tables, Dialect d) {
  if (d != Dialect::kPostgreSQL) return;
  tables.connection().execute("ANALYZE " + tables.names().qualified(d, "locks"));
}

void run(BenchContext& ctx) {
  const std::int64_t rows = ctx.settings().cleaner_rows;
  ScopedTables tables(ctx.target().url);
  auto cleaner_conn = open_connection(ctx.target().url);
  CleanOptions options;
  options.grace = std::chrono::milliseconds(0);

  ctx.progress("cleaner: " + std::to_string(rows) + " expired rows");
  double fill_s =
      fill_lock_rows(ctx.target().url, tables.connection(), tables.names(), "x:", 0, rows, -3600);
  analyze(tables, ctx.dialect());
  CleanResult alone = clean(*cleaner_conn, tables.names(), options);
  double alone_s = std::chrono::duration<double>(alone.duration).count();
  double rate = alone_s > 0 ? static_cast<double>(alone.deleted) / alone_s : 0;
  ctx.headline({.label = "cleaner rows/s (batches of " + std::to_string(options.batch_size) + ")",
                .value = rate,
                .unit = "rows/s",
                .target = ">= 50000",
                .met = rate >= 50'000 ? 1 : 0});

  ctx.progress("acquire p99 with the cleaner idle, then running");
  auto pool = ctx.pool(kClients);
  UniqueKeyLock lock(*pool, {.tables = tables.names()});
  LoadResult idle = acquire_load(ctx, lock);
  fill_lock_rows(ctx.target().url, tables.connection(), tables.names(), "y:", 0, rows, -3600);
  analyze(tables, ctx.dialect());
  std::atomic<bool> stop{false};
  std::atomic<bool> finished{false};
  CleanResult during_clean;
  CleanOptions during_options = options;
  during_options.stop = &stop;
  std::thread cleaner([&] {
    during_clean = clean(*cleaner_conn, tables.names(), during_options);
    finished = true;
  });
  LoadResult busy = acquire_load(ctx, lock);
  bool busy_throughout = !finished.load();
  stop = true;
  cleaner.join();

  double p99_idle = idle.latency.percentile(99) / 1000;
  double p99_busy = busy.latency.percentile(99) / 1000;
  nlohmann::json j{{"rows", rows},
                   {"fill_seconds", fill_s},
                   {"deleted", alone.deleted},
                   {"batches", alone.batches},
                   {"seconds", alone_s},
                   {"rows_per_s", rate},
                   {"acquire_release_idle", idle.latency.summary_ms()},
                   {"acquire_release_during_clean", busy.latency.summary_ms()},
                   {"cleaner_ran_through_the_window", busy_throughout},
                   {"deleted_during_window_run", during_clean.deleted},
                   {"ratio_p99_during_clean_vs_idle", p99_idle > 0 ? p99_busy / p99_idle : 0}};
  ctx.headline({.label = "acquire+release p99 during clean / idle",
                .value = j["ratio_p99_during_clean_vs_idle"].get<double>(),
                .unit = "x",
                .ratio = true});
  ctx.headline({.label = "acquire+release p99, cleaner running", .value = p99_busy, .unit = "ms"});
  ctx.headline({.label = "acquire+release p99, cleaner idle", .value = p99_idle, .unit = "ms"});
  j["what"] =
      "clean() with grace 0 and default batches over N expired rows (PostgreSQL: "
      "table analysed after the fill); then " +
      std::to_string(kClients) +
      " clients acquire + release fresh keys with the cleaner idle and while it deletes "
      "another N expired rows";
  ctx.out()["cleaner"] = j;
}

DBLOCK_BENCH_SCENARIO("cleaner", 60, run);

}  // namespace
}  // namespace dblock::bench
