// SPDX-License-Identifier: Apache-2.0
// Uncontended acquire + release on random keys: dblock's UniqueKeyLock against the identical
// statements sent by a raw client loop, at the same connection count (see compare.hpp); and the
// same for a set of two keys (lock_set.hpp) against the raw loop taking both in key order; and the
// raw loop against itself, the noise floor of every such ratio in this run; and dblock with an
// observer installed (dblock/observer.hpp) against dblock without one: what events cost.
#include <atomic>
#include <stdexcept>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/observer.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

constexpr std::int64_t kTtlMs = 30'000;

// Acquires `keys` fresh random keys in key order, then releases them newest first.
Operation raw_operation(const Target& target, const LockSql& sql, int keys) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, owner, keys] {
    std::vector<std::pair<std::string, std::int64_t>> held;
    const std::string stem = random_key("u:");
    for (int i = 0; i < keys; ++i) {
      std::string key = stem + ":" + std::to_string(i);
      RawResult r = client->execute(sql.acquire.sql(),
                                    sql.acquire_params(key, random_key(""), owner, kTtlMs));
      std::int64_t token = sql.dialect == Dialect::kPostgreSQL
                               ? (r.has_row ? r.first : 0)
                               : static_cast<std::int64_t>(r.insert_id);
      if (token == 0) return false;
      held.emplace_back(std::move(key), token);
    }
    for (auto it = held.rbegin(); it != held.rend(); ++it) {
      client->execute(sql.release.sql(),
                      sql.release_params(it->first, owner, it->second, "r-" + random_key("")));
    }
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

// An observer doing what a metrics adapter does with each event: count it, add up durations.
class Counting final : public Observer {
 public:
  void acquire_ended(const AcquireEnded& e) override {
    acquisitions_.fetch_add(1, std::memory_order_relaxed);
    waited_ns_.fetch_add(e.waited.count(), std::memory_order_relaxed);
  }
  void renewed(const Renewed&) override { renewals_.fetch_add(1, std::memory_order_relaxed); }
  void released(const Released& e) override {
    releases_.fetch_add(1, std::memory_order_relaxed);
    held_ns_.fetch_add(e.held_for.count(), std::memory_order_relaxed);
  }
  std::int64_t acquisitions() const { return acquisitions_.load(); }
  std::int64_t releases() const { return releases_.load(); }

 private:
  std::atomic<std::int64_t> acquisitions_{0}, renewals_{0}, releases_{0};
  std::atomic<std::int64_t> waited_ns_{0}, held_ns_{0};
};

Operation dblock_set_operation(UniqueKeyLock& lock, int keys) {
  return [&lock, keys] {
    const std::string stem = random_key("u:");
    std::vector<std::string> set;
    for (int i = 0; i < keys; ++i) set.push_back(stem + ":" + std::to_string(i));
    auto leases = try_acquire_all(lock, set);
    if (!leases) return false;
    leases->release();
    return true;
  };
}

nlohmann::json run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  LockSql sql(ctx.dialect(), tables.names());
  nlohmann::json points = nlohmann::json::array();
  for (int c : s.connections) {
    ctx.progress("uncontended acquire+release, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    Comparison r = compare(
        s, c, [&](int) { return raw_operation(ctx.target(), sql, 1); },
        [&](int) { return dblock_operation(lock); });
    if (c == 1 || c == 8) {
      ratio_headline(ctx, "dblock/raw acquire+release, " + std::to_string(c) + " conn", r.ratio());
    }
    points.push_back(r.to_json());
  }
  // The noise floor of these ratios on this machine: the raw loop against itself, measured the
  // same way. A headline of dblock's within the spread of this one says nothing about dblock.
  nlohmann::json floor_points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("noise floor: raw against raw, " + std::to_string(c) + " connection(s)");
    Comparison r = compare(
        s, c, [&](int) { return raw_operation(ctx.target(), sql, 1); },
        [&](int) { return raw_operation(ctx.target(), sql, 1); });
    untargeted_ratio_headline(
        ctx, "noise floor raw/raw acquire+release, " + std::to_string(c) + " conn", r.ratio());
    floor_points.push_back(r.to_json());
  }
  ctx.section("noise_floor",
              "the raw acquire+release loop compared with itself, in pairs of rounds as dblock is "
              "compared with it: how far a ratio strays from 1 when both sides do the same work",
              floor_points);
  constexpr int kSetKeys = 2;
  nlohmann::json set_points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("uncontended lock set of 2 keys, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    Comparison r = compare(
        s, c, [&](int) { return raw_operation(ctx.target(), sql, kSetKeys); },
        [&](int) { return dblock_set_operation(lock, kSetKeys); });
    ratio_headline(ctx,
                   "dblock/raw lock set of 2 keys acquire+release, " + std::to_string(c) + " conn",
                   r.ratio());
    set_points.push_back(r.to_json());
  }
  ctx.section(
      "uncontended_lock_set",
      "try_acquire_all + release of two fresh random keys per operation; raw = the same four "
      "statements (two acquires in key order, two releases) from a plain client loop",
      set_points);
  // What events cost: the same dblock loop without and with an observer (LockOptions::observer,
  // which the observed side's acquisitions pass). Both sides are dblock's.
  nlohmann::json observer_points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("uncontended acquire+release with an observer, " + std::to_string(c) +
                 " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    auto counting = std::make_shared<Counting>();
    LockOptions observed;
    observed.observer = counting;
    const auto observed_operation = [&lock, &observed] {
      return Operation([&lock, &observed] {
        auto lease = lock.try_acquire(random_key("u:"), observed);
        if (!lease) return false;
        lease->release();
        return true;
      });
    };
    Comparison r = compare(
        s, c, [&](int) { return dblock_operation(lock); },
        [&](int) { return observed_operation(); });
    if (counting->acquisitions() == 0 || counting->acquisitions() != counting->releases()) {
      throw std::runtime_error("the observer saw " + std::to_string(counting->acquisitions()) +
                               " acquisitions and " + std::to_string(counting->releases()) +
                               " releases; each operation has one of each");
    }
    ctx.headline({.label = "observed/unobserved acquire+release, " + std::to_string(c) + " conn",
                  .value = r.ratio(),
                  .unit = "x",
                  .target = ">= 0.98",
                  .met = r.ratio() >= 0.98 ? 1 : 0,
                  .ratio = true});
    // The same cost without the database's noise: the client's CPU time per operation, which
    // is where an observer's work goes. On one connection an operation's time is the client's
    // CPU plus the round trips, so an observer that adds d to an operation of t keeps t / (t + d)
    // of the throughput: >= 0.98 while d / t <= 0.0204.
    const double added_cpu_us = r.dblock.cpu_us_per_op() - r.raw.cpu_us_per_op();
    ctx.headline({.label = "observer CPU per acquire+release, " + std::to_string(c) + " conn",
                  .value = added_cpu_us,
                  .unit = "us"});
    if (c == 1 && r.raw.ops > 0) {
      const double op_us = r.raw.seconds * 1e6 / static_cast<double>(r.raw.ops);
      const double share = added_cpu_us / op_us;
      ctx.headline({.label = "observer CPU / acquire+release time, 1 conn",
                    .value = share,
                    .unit = "x",
                    .target = "<= 0.0204",
                    .met = share <= 0.0204 ? 1 : 0,
                    .ratio = true});
    }
    nlohmann::json point = r.to_json();
    point["observed_acquisitions"] = counting->acquisitions();
    point["observer_cpu_us_per_op"] = added_cpu_us;
    observer_points.push_back(std::move(point));
  }
  ctx.section("observer_cost",
              "try_acquire + release of a fresh random key per operation, with an observer that "
              "counts events and adds up their durations given in LockOptions::observer (the "
              "'dblock' side) against none (the 'raw' side): the cost of events",
              observer_points);
  return points;
}

DBLOCK_BENCH_SCENARIO(
    "uncontended", 10, run,
    "try_acquire + release of a fresh random key per operation; raw = the same two rendered "
    "statements and parameters from a plain client loop; ops_per_s counts acquire+release "
    "pairs; latency is of the pair");

}  // namespace
}  // namespace dblock::bench
