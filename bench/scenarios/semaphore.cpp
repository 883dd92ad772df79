// SPDX-License-Identifier: Apache-2.0
// The counting semaphore (Semaphore):
// - uncontended try_acquire + release of one permit of a random key out of 64 at each connection
//   count, against a raw loop sending the same statements (PostgreSQL: acquire, release; MySQL:
//   slots, acquire_slot of a free slot picked at random client-side, release); ratio = dblock /
//   raw throughput (see compare.hpp). The keys' limits (100 permits, more than the most
//   connections, so no acquire finds its key full) are stored before anything is timed;
// - contended: 16 clients loop acquire(key, 2 s), hold ~1 ms, release on one key of 4 permits:
//   throughput, acquire wait p50/p99, statements per acquisition, and the most holders seen at
//   once in this process. That must never pass 4: the run fails if it does (a bug in the
//   strategy). Through one Semaphore and through one per client (as processes would), each with
//   release notifications (SemaphoreOptions::notify; PostgreSQL) and with polling only; the
//   headline is the wait's p99 polling / notified, a lock object per client.
#include "dblock/semaphore.hpp"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../counting_source.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "../raw_permits.hpp"

namespace dblock::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeys = 64;
constexpr std::int64_t kPermits = 100;
constexpr std::int64_t kTtlMs = 30'000;  // LockOptions' default TTL, which dblock sends
constexpr int kContendedPermits = 4;
constexpr int kContendedClients = 16;
constexpr auto kHold = std::chrono::milliseconds(1);
// Work between a client's holds: a release is not followed at once by the same client's next
// acquire, which would take the freed permit before any waiter (16 clients x 1 of 3 ms still
// ask for more than the 4 permits).
constexpr auto kBetween = std::chrono::milliseconds(2);
constexpr auto kWait = std::chrono::seconds(2);

std::vector<std::string> make_keys() {
  const std::string run = random_key("sem:");
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(run + ":" + std::to_string(i));
  return keys;
}

const std::string& pick(const std::vector<std::string>& keys) {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  return keys[rng() % keys.size()];
}

Operation raw_operation(const Target& target, const PermitSql& sql,
                        const std::vector<std::string>& keys) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, &keys, owner] {
    const std::string& key = pick(keys);
    const std::string lease_id = random_key("");
    const std::int64_t token = raw_take_permit(
        *client, sql, {key, kPermits, {0, kPermits - 1, -1}, lease_id, owner, kTtlMs});
    if (token == 0) return false;
    return raw_release_permit(*client, sql, key, owner, token, lease_id);
  };
}

Operation dblock_operation(Semaphore& semaphore, const std::vector<std::string>& keys) {
  return [&semaphore, &keys] {
    auto permit = semaphore.try_acquire(pick(keys));
    if (!permit) return false;
    return permit->release() == ReleaseOutcome::kReleased;
  };
}

// The contended run: `notify` (else polling only), through a Semaphore per client (`apart`) or
// one for all.
nlohmann::json contended(BenchContext& ctx, const TableNames& tables, bool notify, bool apart) {
  auto pool = ctx.pool(kContendedClients);
  CountingSource counting(*pool);
  std::vector<std::unique_ptr<Semaphore>> semaphores;
  for (int i = 0; i < (apart ? kContendedClients : 1); ++i) {
    semaphores.push_back(std::make_unique<Semaphore>(
        counting, kContendedPermits, SemaphoreOptions{.tables = tables, .notify = notify}));
  }
  const std::string key = random_key("sem-hot:");
  semaphores[0]->set_limit(key);
  counting.reset();

  // Holders are counted from the acquire's return to just before the release is sent, inside
  // the permit's life: the count is never above the permits the database holds at that moment.
  std::atomic<int> holders{0}, most{0};
  std::atomic<std::uint64_t> acquisitions{0}, not_released{0};
  struct Grant {
    Clock::time_point when;
    double wait_us;
  };
  std::vector<std::vector<Grant>> grants(kContendedClients);
  std::vector<std::vector<Clock::time_point>> timeouts(kContendedClients);
  LoadResult load = run_load(kContendedClients, ctx.settings().duration, [&](int i) -> Operation {
    return [&, i] {
      const auto asked = Clock::now();
      auto permit = semaphores[apart ? i : 0]->acquire(key, kWait);
      const auto now = Clock::now();
      if (!permit) {
        timeouts[i].push_back(now);
        return false;
      }
      grants[i].push_back({now, std::chrono::duration<double, std::micro>(now - asked).count()});
      acquisitions.fetch_add(1);
      const int held = holders.fetch_add(1) + 1;
      int seen = most.load();
      while (held > seen && !most.compare_exchange_weak(seen, held)) {
      }
      std::this_thread::sleep_for(kHold);
      holders.fetch_sub(1);
      if (permit->release() != ReleaseOutcome::kReleased) not_released.fetch_add(1);
      std::this_thread::sleep_for(kBetween);
      return true;
    };
  });

  if (most.load() > kContendedPermits) {
    const std::string message =
        "semaphore contended run: " + std::to_string(most.load()) +
        " holders at once of a key with " + std::to_string(kContendedPermits) +
        " permits; the semaphore granted more permits than its limit: this is a bug in the "
        "strategy";
    std::cerr << "dblock-bench: LIBRARY BUG: " << message << std::endl;
    throw std::runtime_error(message);
  }

  // Grants and timeouts inside the measured window.
  const auto end = load.started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(load.seconds));
  Latencies wait;
  std::uint64_t timed_out = 0;
  for (int i = 0; i < kContendedClients; ++i) {
    for (const Grant& g : grants[i]) {
      if (g.when >= load.started && g.when <= end) wait.add(g.wait_us);
    }
    for (const auto& t : timeouts[i]) {
      if (t >= load.started && t <= end) ++timed_out;
    }
  }
  const double statements_per_acquisition =
      static_cast<double>(counting.statements()) /
      static_cast<double>(std::max<std::uint64_t>(acquisitions.load(), 1));
  nlohmann::json out = {{"permits", kContendedPermits},
                        {"clients", kContendedClients},
                        {"notify", notify},
                        {"lock_per_client", apart},
                        {"hold_ms", kHold.count()},
                        {"between_holds_ms", kBetween.count()},
                        {"acquire_timeout_ms", kWait.count() * 1000},
                        {"ops", load.ops},
                        {"ops_per_s", load.per_second()},
                        {"seconds", load.seconds},
                        {"acquire_wait", wait.summary_ms()},
                        {"timed_out", timed_out},
                        {"release_not_held", not_released.load()},
                        {"statements_per_acquisition", statements_per_acquisition},
                        {"max_concurrent_holders_seen", most.load()}};
  const std::string conditions = std::to_string(kContendedPermits) + " permits, " +
                                 std::to_string(kContendedClients) + " clients" +
                                 (apart ? ", lock per client" : "") + (notify ? "" : ", polling");
  ctx.headline({.label = "semaphore " + conditions + ": max holders",
                .value = static_cast<double>(most.load()),
                .unit = "holders"});
  ctx.headline({.label = "semaphore " + conditions + ": cycles/s",
                .value = load.per_second(),
                .unit = "/s"});
  return out;
}

// The contended runs, and on PostgreSQL the wait's p99 with polling only over the same with
// notifications, a Semaphore per client (target: at least 5).
nlohmann::json contended_runs(BenchContext& ctx, const TableNames& tables) {
  nlohmann::json runs = nlohmann::json::array();
  const bool notifies = ctx.dialect() == Dialect::kPostgreSQL;
  for (const bool apart : {false, true}) {
    for (const bool notify : {true, false}) {
      if (!notify && !notifies) continue;  // the same run: MySQL has no notifications
      ctx.progress("semaphore contended, " + std::to_string(kContendedPermits) + " permits, " +
                   std::to_string(kContendedClients) + " clients" +
                   (apart ? ", a Semaphore per client" : "") + (notify ? "" : ", polling"));
      runs.push_back(contended(ctx, tables, notify, apart));
    }
  }
  if (notifies) {
    wake_ratio_headline(ctx, "semaphore contended wait p99, polling / notified, lock per client",
                        runs[2], runs[3]);
  }
  return runs;
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  PermitSql sql(ctx.dialect(), tables.names());
  const std::vector<std::string> keys = make_keys();
  {
    ctx.progress("semaphore: storing the limits of " + std::to_string(kKeys) + " keys");
    auto pool = ctx.pool(1);
    Semaphore semaphore(*pool, kPermits, {.tables = tables.names()});
    for (const auto& key : keys) semaphore.set_limit(key);
  }

  nlohmann::json points = nlohmann::json::array();
  for (int c : s.connections) {
    ctx.progress("semaphore try_acquire+release, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    Semaphore semaphore(*pool, kPermits, {.tables = tables.names()});
    Comparison r = compare(
        s, c, [&](int) { return raw_operation(ctx.target(), sql, keys); },
        [&](int) { return dblock_operation(semaphore, keys); });
    if (c == 1 || c == 8) {
      ratio_headline(ctx, "dblock/raw semaphore acquire+release, " + std::to_string(c) + " conn",
                     r.ratio());
    }
    points.push_back(r.to_json());
  }
  ctx.section(
      "semaphore",
      "try_acquire + release of one permit of a random key out of " + std::to_string(kKeys) +
          " (limit " + std::to_string(kPermits) +
          " permits each, stored before timing, so no try finds its key full); raw = the same "
          "rendered statements and parameters from a plain client loop (PostgreSQL: acquire, "
          "release; MySQL: slots, acquire_slot of a free slot picked at random client-side, "
          "release); ops_per_s counts acquire+release pairs; latency is of the pair",
      points);

  nlohmann::json hot = {
      {"what",
       "N clients loop acquire(key, 2 s), hold ~1 ms, release, 2 ms of work, on one key with 4 "
       "permits, "
       "through one Semaphore or one per client (lock_per_client), waiters woken by release "
       "notifications (notify, PostgreSQL) or polling with backoff only; ops_per_s counts "
       "acquire+hold+release cycles; acquire_wait is from the call to the grant; "
       "statements_per_acquisition counts every statement (tries and releases) over the run; "
       "max_concurrent_holders_seen is counted in this process from grant to release and must "
       "never exceed the permits"},
      {"runs", contended_runs(ctx, tables.names())}};
  ctx.out()["semaphore_contended"] = hot;
}

DBLOCK_BENCH_SCENARIO("semaphore", 25, run);

}  // namespace
}  // namespace dblock::bench
