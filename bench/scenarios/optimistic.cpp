// SPDX-License-Identifier: Apache-2.0
// The optimistic strategy (read the key's version in a transaction; release = compare-and-set
// UPDATE, then COMMIT):
// - uncontended acquire + release at 1 and 8 connections, each thread on its own keys, against a
//   raw loop sending the same statements in the same order (BEGIN, version read, CAS, COMMIT);
//   ratio = dblock / raw throughput (see compare.hpp);
// - contended: 8 clients increment one counter under one key with with_lock (a conflicted
//   attempt rolls back and runs again): commits/s, conflicts per commit, attempts per commit.
//   The counter is read and written back as read + 1, so a lost update would show: the run
//   fails unless the counter ends equal to the number of commits.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../key_set.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "dblock/error.hpp"
#include "dblock/optimistic_lock.hpp"

namespace dblock::bench {
namespace {

constexpr int kKeysPerThread = 64;
constexpr int kContendedClients = 8;

Operation raw_operation(const Target& target, const TransactionSql& sql, const KeySet& keys,
                        int thread) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  return [client, &sql, &keys, thread] {
    const std::string& key = keys.pick(thread);
    client->execute(sql.begin);
    RawResult read =
        client->execute(sql.version_read.sql(), sql.version_read.bind({{"key", Value(key)}}));
    if (!read.has_row) {
      client->execute(sql.rollback);
      return false;
    }
    RawResult cas = client->execute(
        sql.version_cas.sql(),
        sql.version_cas.bind({{"key", Value(key)}, {"version", Value(read.first)}}));
    const bool won = sql.dialect == Dialect::kPostgreSQL ? cas.has_row : cas.affected == 1;
    client->execute(won ? sql.commit : sql.rollback);
    return won;
  };
}

Operation dblock_operation(OptimisticLock& lock, const KeySet& keys, int thread) {
  return [&lock, &keys, thread] {
    auto lease = lock.try_acquire(keys.pick(thread));
    if (!lease) return false;
    return lease->release() == ReleaseOutcome::kReleased;
  };
}

// One finished with_lock call of the contended run.
struct Outcome {
  std::chrono::steady_clock::time_point when;
  int attempts = 0;
  int conflicts = 0;
  bool committed = false;
};

void contended(BenchContext& ctx, ScopedTables& tables, nlohmann::json& out) {
  const Dialect d = ctx.dialect();
  const bool pg = d == Dialect::kPostgreSQL;
  const std::string counter = tables.names().qualified(d, "bench_counter");
  tables.connection().execute("CREATE TABLE " + counter +
                              (pg ? " (id integer PRIMARY KEY, n bigint NOT NULL)"
                                  : " (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB"));
  tables.connection().execute("INSERT INTO " + counter + " (id, n) VALUES (1, 0)");
  const std::string read_sql = "SELECT n FROM " + counter + " WHERE id = 1";
  const std::string write_sql =
      "UPDATE " + counter + " SET n = " + (pg ? "$1" : "?") + " WHERE id = 1";

  auto pool = ctx.pool(kContendedClients);
  OptimisticLock lock(*pool, {.tables = tables.names()});
  const std::string key = random_key("counter:");
  lock.try_acquire(key)->release();  // creates the key's version row before the run

  std::atomic<std::int64_t> commits_total{0};
  std::vector<std::vector<Outcome>> outcomes(kContendedClients);
  LoadResult load = run_load(kContendedClients, ctx.settings().duration, [&](int i) -> Operation {
    return [&, i] {
      LockAttempts tries;
      bool committed = false;
      try {
        committed = with_lock(
                        lock, key, std::chrono::seconds(10), {},
                        [&](Lease& lease) {
                          Connection& db = *lease.connection();
                          const std::int64_t n = db.execute(read_sql).int64_at(0, "n");
                          db.execute(write_sql, {Value(n + 1)});
                        },
                        &tries)
                        .has_value();
      } catch (const Error& e) {
        // A deadlock or serialization failure on the last attempt: given up, as a conflict.
        if (!detail::is_conflict_error(e)) throw;
        tries.conflicts = tries.attempts;
      }
      if (committed) commits_total.fetch_add(1);
      outcomes[i].push_back(
          {std::chrono::steady_clock::now(), tries.attempts, tries.conflicts, committed});
      return committed;
    };
  });

  const std::int64_t final_n = tables.connection().execute(read_sql).int64_at(0, "n");
  if (final_n != commits_total.load()) {
    throw std::runtime_error("optimistic contended run: the counter is " + std::to_string(final_n) +
                             " after " + std::to_string(commits_total.load()) +
                             " commits, so an update was lost; this is a bug in the strategy");
  }

  // The with_lock calls that ended inside the measured window.
  const auto end = load.started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(load.seconds));
  std::uint64_t commits = 0, gave_up = 0, conflicts = 0;
  Latencies attempts;  // attempts per commit (recorded as plain numbers, not microseconds)
  for (const auto& own : outcomes) {
    for (const Outcome& o : own) {
      if (o.when < load.started || o.when > end) continue;
      conflicts += static_cast<std::uint64_t>(o.conflicts);
      if (o.committed) {
        ++commits;
        attempts.add(o.attempts);
      } else {
        ++gave_up;
      }
    }
  }
  const double per_s = load.seconds > 0 ? static_cast<double>(commits) / load.seconds : 0;
  const double conflicts_per_commit =
      static_cast<double>(conflicts) / static_cast<double>(std::max<std::uint64_t>(commits, 1));
  const double attempts_p50 = attempts.percentile(50), attempts_p99 = attempts.percentile(99);
  const RetryPolicy policy = lock.retry_policy();
  out = {{"clients", kContendedClients},
         {"commits", commits},
         {"commits_per_s", per_s},
         {"conflicts", conflicts},
         {"conflicts_per_commit", conflicts_per_commit},
         {"gave_up", gave_up},
         {"attempts_per_commit",
          {{"p50", attempts_p50},
           {"p99", attempts_p99},
           {"mean", attempts.mean()},
           {"max_allowed", policy.max_attempts}}},
         {"counter_after_run", final_n},
         {"commits_in_whole_run", commits_total.load()}};
  const std::string clients = std::to_string(kContendedClients) + " clients";
  ctx.headline(
      {.label = "optimistic contended commits/s, " + clients, .value = per_s, .unit = "/s"});
  ctx.headline(
      {.label = "optimistic conflicts per commit, " + clients, .value = conflicts_per_commit});
  ctx.headline({.label = "optimistic attempts per commit p99, " + clients, .value = attempts_p99});
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  TransactionSql sql(ctx.dialect(), tables.names());
  const int max_threads = 8;
  KeySet keys("opt:", max_threads, kKeysPerThread);
  auto pool = ctx.pool(max_threads);
  OptimisticLock lock(*pool, {.tables = tables.names()});
  ctx.progress("optimistic: creating " + std::to_string(max_threads * kKeysPerThread) +
               " version rows");
  keys.prepare(lock);

  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, max_threads}) {
    ctx.progress("optimistic acquire+release, " + std::to_string(c) + " connection(s)");
    Comparison r = compare(
        s, c, [&](int i) { return raw_operation(ctx.target(), sql, keys, i); },
        [&](int i) { return dblock_operation(lock, keys, i); });
    ratio_headline(ctx, "optimistic dblock/raw acquire+release, " + std::to_string(c) + " conn",
                   r.ratio());
    points.push_back(r.to_json());
  }

  ctx.progress("optimistic contended counter, " + std::to_string(kContendedClients) + " clients");
  nlohmann::json hot;
  contended(ctx, tables, hot);

  ctx.out()["optimistic"] = {
      {"what",
       "uncontended: try_acquire (BEGIN, version read) + release (CAS, COMMIT) of a random key "
       "out of the thread's own " +
           std::to_string(kKeysPerThread) +
           " (their version rows created before timing); raw = the same statements from a plain "
           "client loop; ops_per_s counts committed pairs. contended: N clients run with_lock on "
           "one key, reading a counter and writing it back + 1 through the lease's transaction; "
           "a conflict rolls back and retries (the default retry policy); attempts_per_commit "
           "counts runs of the critical section per commit; gave_up = with_lock calls that used "
           "every attempt"},
      {"uncontended", {{"points", points}}},
      {"contended", hot}};
}

DBLOCK_BENCH_SCENARIO("optimistic", 20, run);

}  // namespace
}  // namespace dblock::bench
