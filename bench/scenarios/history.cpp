// SPDX-License-Identifier: Apache-2.0
// The history of holds (dblock/history.hpp) on and off: uncontended acquire + release of a fresh
// key on a lock table without history against one with it enabled, at 1 and 8 connections, in
// pairs of rounds (compare.hpp); then the statements each side sends per acquire + release,
// counted through a CountingSource, of a fresh key and of one key taken again and again (its row
// is there: on MySQL and MariaDB the acquire is then an UPDATE, whose trigger makes the lock read
// its token again), and the history rows the measured side wrote (one per operation, or the
// triggers were not running).
#include "dblock/history.hpp"

#include <stdexcept>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../counting_source.hpp"
#include "../lock_sql.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

// try_acquire + release of `key`, or of a fresh random key when it is empty.
auto acquire_release(UniqueKeyLock& lock, std::string key = "") {
  return [&lock, key](int) -> Operation {
    return [&lock, key] {
      auto lease = lock.try_acquire(key.empty() ? random_key("h:") : key);
      if (!lease) return false;
      lease->release();
      return true;
    };
  };
}

// Statements `lock` sends per acquire + release of `key` (empty: a fresh one each time) over
// `ops` operations, through `counted`.
double statements_per_op(CountingSource& counted, UniqueKeyLock& lock, int ops,
                         const std::string& key) {
  counted.reset();
  const Operation op = acquire_release(lock, key)(0);
  for (int i = 0; i < ops; ++i) {
    if (!op()) throw std::runtime_error("an uncontended key was refused");
  }
  return static_cast<double>(counted.statements()) / ops;
}

std::int64_t history_rows(Connection& conn, const TableNames& tables) {
  return conn.execute("SELECT count(*) AS n FROM " + tables.qualified(conn.dialect(), "history"))
      .int64_at(0, "n");
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables off(ctx.target().url);
  ScopedTables on(ctx.target().url);
  enable_history(on.connection(), on.names());
  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("acquire+release with history off and on, " + std::to_string(c) +
                 " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock plain(*pool, {.tables = off.names()});
    UniqueKeyLock recorded(*pool, {.tables = on.names()});
    const std::int64_t rows_before = history_rows(on.connection(), on.names());
    Comparison cmp = compare(s, c, acquire_release(plain), acquire_release(recorded));
    const std::int64_t written = history_rows(on.connection(), on.names()) - rows_before;
    if (written < static_cast<std::int64_t>(cmp.dblock.ops)) {
      throw std::runtime_error("history on: " + std::to_string(cmp.dblock.ops) +
                               " acquire+release pairs wrote " + std::to_string(written) +
                               " history rows; each must write one");
    }
    ctx.headline({.label = "history on/off acquire+release, " + std::to_string(c) + " conn",
                  .value = cmp.ratio(),
                  .unit = "x",
                  .ratio = true});
    points.push_back({{"connections", c},
                      {"off", load_figures(cmp.raw)},
                      {"on", load_figures(cmp.dblock)},
                      {"ratio_on_vs_off", cmp.ratio()},
                      {"ratio_on_vs_off_per_round", cmp.round_ratios},
                      {"history_rows_written", written}});
  }
  // The statements, outside the timed rounds (counting is the benchmark's overhead).
  constexpr int kCountedOps = 500;
  auto pool = ctx.pool(1);
  CountingSource counted(*pool);
  UniqueKeyLock plain(counted, {.tables = off.names()});
  UniqueKeyLock recorded(counted, {.tables = on.names()});
  nlohmann::json statements = nlohmann::json::object();
  for (const char* key : {"", "h:again"}) {
    const bool fresh = *key == '\0';
    const double off_statements = statements_per_op(counted, plain, kCountedOps, key);
    const double on_statements = statements_per_op(counted, recorded, kCountedOps, key);
    const double extra = on_statements - off_statements;
    ctx.headline(
        {.label = std::string("history: statements added, ") + (fresh ? "fresh key" : "key again"),
         .value = extra,
         .unit = "statements",
         .target = "<= 1",
         .met = extra <= 1 ? 1 : 0});
    statements[fresh ? "fresh_key" : "same_key"] = {{"off", off_statements}, {"on", on_statements}};
  }
  ctx.out()["history"] = {
      {"what",
       "try_acquire + release of a fresh random key per operation on a lock table without the "
       "history of holds ('off') and on one with it enabled ('on': the triggers write a row per "
       "ended hold in the releasing statement); statements counted over " +
           std::to_string(kCountedOps) +
           " operations on one connection, of a fresh key each time and of one key again"},
      {"uncontended", points},
      {"statements_per_op", statements}};
}

DBLOCK_BENCH_SCENARIO("history", 47, run);

}  // namespace
}  // namespace dblock::bench
