// SPDX-License-Identifier: Apache-2.0
// Native session locks as a reference point: pg_advisory_lock / pg_advisory_unlock on
// PostgreSQL, GET_LOCK / RELEASE_LOCK on MySQL/MariaDB, sent by the raw client. They are neither
// durable nor fenced and are lost on failover (see DESIGN), so they are a floor for the cost of a
// lock, not an alternative: uncontended at 1 and 8 connections (ratio = dblock / native, from the
// uncontended scenario's figures of this run) and the hot key with blocking waits in the server.
//
// dblock's SessionLock next to them: try_acquire + release of a random key at 1 and 8
// connections against a raw loop sending the statements SessionLock sends (the rendered
// try_lock with its fencing token, and the unlock; ratio = dblock / raw, alternating rounds, see
// compare.hpp), and its hot-key handoff (blocking waits in the server) next to the native one.
#include <algorithm>
#include <atomic>
#include <random>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../hot_key.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "dblock/session_lock.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::bench {
namespace {

struct NativeSql {
  std::string lock, unlock;
  explicit NativeSql(Dialect d)
      : lock(d == Dialect::kPostgreSQL ? "SELECT pg_advisory_lock($1::bigint)"
                                       : "SELECT GET_LOCK(?, 10)"),
        unlock(d == Dialect::kPostgreSQL ? "SELECT pg_advisory_unlock($1::bigint)"
                                         : "SELECT RELEASE_LOCK(?)") {}
};

Value native_key(Dialect d, std::uint64_t n) {
  if (d == Dialect::kPostgreSQL) return Value(static_cast<std::int64_t>(n >> 1));
  return Value("bench:" + std::to_string(n));
}

double dblock_rate(BenchContext& ctx, int connections) {
  if (!ctx.out().contains("uncontended")) return 0;
  for (const auto& p : ctx.out()["uncontended"]["points"]) {
    if (p["connections"] == connections) return p["dblock"]["ops_per_s"].get<double>();
  }
  return 0;
}

// SessionLock's try and unlock statements, as it renders them.
struct SessionSql {
  SessionSql(Dialect d, const TableNames& tables) {
    const detail::SessionLockSql& sql =
        detail::server_sql(d == Dialect::kPostgreSQL ? Server::kPostgreSQL : Server::kMySQL)
            .session_lock;
    try_lock = detail::Statement(sql.try_lock, d, tables);
    release = detail::Statement(sql.release, d, tables);
  }
  detail::Statement try_lock, release;
};

// A random lock of the shape SessionLock sends: a bigint, or "dblock_" + 40 hex digits.
Value session_key(Dialect d, std::mt19937_64& rng) {
  if (d == Dialect::kPostgreSQL) return Value(static_cast<long long>(rng()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "dblock_";
  for (int i = 0; i < 40; ++i) name += kHex[rng() % 16];
  return Value(name);
}

// SessionLock against the raw statements it sends, at 1 and 8 connections; its hot key.
nlohmann::json run_session(BenchContext& ctx) {
  const Dialect d = ctx.dialect();
  ScopedTables tables(ctx.target().url);
  const SessionSql sql(d, tables.names());
  auto pool = ctx.pool(8);
  SessionLock lock(*pool, {.tables = tables.names()});
  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("session lock try_acquire+release, " + std::to_string(c) + " connection(s)");
    Comparison r = compare(
        ctx.settings(), c,
        [&](int) -> Operation {
          auto client = std::shared_ptr<RawClient>(connect_raw(ctx.target().url));
          auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
          return [client, rng, &sql, d] {
            const Value key = session_key(d, *rng);
            if (!client->execute(sql.try_lock.sql(), sql.try_lock.bind({{"lock", key}})).has_row)
              return false;
            client->execute(sql.release.sql(), sql.release.bind({{"lock", key}}));
            return true;
          };
        },
        [&](int) -> Operation {
          auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
          return [&lock, rng] {
            auto lease = lock.try_acquire("session:" + std::to_string((*rng)()));
            if (!lease) return false;
            lease->release();
            return true;
          };
        });
    const double ratio = r.ratio();
    ctx.headline({.label = "session lock dblock/raw try+release, " + std::to_string(c) + " conn",
                  .value = ratio,
                  .unit = "x",
                  .target = ">= 0.9",
                  .met = ratio >= 0.9 ? 1 : 0,
                  .ratio = true});
    nlohmann::json j = r.to_json();
    // Against dblock's unique-key lock of this run (the uncontended scenario), when it ran.
    const double unique = dblock_rate(ctx, c);
    if (unique > 0) j["ratio_session_vs_unique_key"] = r.dblock.per_second() / unique;
    points.push_back(std::move(j));
  }
  const int clients = ctx.settings().hot_clients.front();
  ctx.progress("session lock hot key, " + std::to_string(clients) + " clients");
  HotKeyResult hot = measure_hot_key(
      ctx, clients,
      [&](ConnectionSource& source) {
        return std::make_unique<SessionLock>(source, SessionLockOptions{.tables = tables.names()});
      },
      false);
  nlohmann::json hot_json = hot.to_json("session_lock", clients);
  ctx.headline(
      {.label = "session lock hot key handoff p50, " + std::to_string(clients) + " clients",
       .value = hot_json["handoff"]["p50_ms"].get<double>(),
       .unit = "ms"});
  return {{"what",
           "dblock's SessionLock: try_acquire + release of a random key; raw = the rendered "
           "session-lock try (with its fencing token) and unlock from a plain client loop; "
           "hot_key: blocking acquire(key, 10 s) on one key, waits in the server"},
          {"uncontended", {{"points", points}}},
          {"hot_key", {{"points", nlohmann::json::array({hot_json})}}}};
}

void run(BenchContext& ctx) {
  const Dialect d = ctx.dialect();
  const NativeSql sql(d);
  const std::string name = d == Dialect::kPostgreSQL ? "advisory" : "GET_LOCK";
  nlohmann::json uncontended = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("native " + name + " uncontended, " + std::to_string(c) + " connection(s)");
    LoadResult r = run_load(c, ctx.settings().duration, [&](int) -> Operation {
      auto client = std::shared_ptr<RawClient>(connect_raw(ctx.target().url));
      auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
      return [client, rng, &sql, d] {
        std::vector<Value> key{native_key(d, (*rng)())};
        client->execute(sql.lock, key);
        client->execute(sql.unlock, key);
        return true;
      };
    });
    nlohmann::json j = r.latency.summary_ms();
    j["connections"] = c;
    j["ops_per_s"] = r.per_second();
    double lib = dblock_rate(ctx, c);
    if (lib > 0) {
      j["ratio_dblock_vs_native"] = lib / std::max(r.per_second(), 1e-9);
      ctx.headline({.label = "dblock/" + name + " acquire+release, " + std::to_string(c) + " conn",
                    .value = j["ratio_dblock_vs_native"].get<double>(),
                    .unit = "x",
                    .ratio = true});
    }
    uncontended.push_back(std::move(j));
  }

  nlohmann::json hot = nlohmann::json::array();
  for (int clients : ctx.settings().hot_clients) {
    ctx.progress("native " + name + " hot key, " + std::to_string(clients) + " clients");
    const std::vector<Value> key{native_key(d, std::random_device{}())};
    GrantLog log(clients);
    LoadResult r = run_load(clients, ctx.settings().duration, [&](int i) -> Operation {
      auto client = std::shared_ptr<RawClient>(connect_raw(ctx.target().url));
      return [&, client, i] {
        const auto asked = std::chrono::steady_clock::now();
        RawResult got = client->execute(sql.lock, key);
        // GET_LOCK returns 0 on its 10 s timeout; pg_advisory_lock waits as long as it takes.
        if (d == Dialect::kMySQL && got.first != 1) return false;
        log.granted(i, asked);
        auto releasing = log.releasing();
        client->execute(sql.unlock, key);
        log.released(i, releasing);
        return true;
      };
    });
    HotKeyResult result = log.summarize(std::move(r));
    result.statements_per_acquisition = 2;
    nlohmann::json j = result.to_json(name, clients);
    if (clients == ctx.settings().hot_clients.front()) {
      ctx.headline(
          {.label = "hot key handoff p50, " + name + ", " + std::to_string(clients) + " clients",
           .value = j["handoff"]["p50_ms"].get<double>(),
           .unit = "ms"});
    }
    hot.push_back(std::move(j));
  }
  ctx.out()["native_locks"] = {
      {"what", name + " session locks from the raw client: lock + unlock of a random key per "
                      "operation, and a hot key with blocking waits in the server"},
      {"uncontended", uncontended},
      {"hot_key", hot},
      {"session_lock", run_session(ctx)}};
  // The hot-key curve joins the chart and the table next to dblock's.
  if (ctx.out().contains("hot_key")) {
    for (auto& j : hot) ctx.out()["hot_key"]["points"].push_back(j);
  }
}

DBLOCK_BENCH_SCENARIO("native_locks", 40, run);

}  // namespace
}  // namespace dblock::bench
