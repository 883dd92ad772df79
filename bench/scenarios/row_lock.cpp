// SPDX-License-Identifier: Apache-2.0
// The row lock (SELECT ... FOR UPDATE in a transaction on a dedicated connection):
// - uncontended try_acquire + release at 1 and 8 connections, each thread on its own keys, against
//   a raw loop sending the same statements in the same order (BEGIN, the rendered lock
//   statement(s), COMMIT); ratio = dblock / raw throughput (see compare.hpp);
// - a hot key: 8 clients block on one key with acquire(key, 10 s). The server queues the waiters
//   and wakes the next one at COMMIT, so this is the comparison with the unique-key hot key,
//   whose waiters are woken by NOTIFY or poll.
#include "dblock/row_lock.hpp"

#include "../bench.hpp"
#include "../compare.hpp"
#include "../hot_key.hpp"
#include "../key_set.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"

namespace dblock::bench {
namespace {

constexpr int kKeysPerThread = 64;
constexpr int kHotClients = 8;

Operation raw_operation(const Target& target, const TransactionSql& sql, const KeySet& keys,
                        int thread) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, &keys, thread, owner] {
    const std::string& key = keys.pick(thread);
    client->execute(sql.begin);
    RawResult r = client->execute(sql.row_lock_try.sql(), sql.row_lock_try_params(key, owner));
    if (!r.has_row) {
      client->execute(sql.rollback);
      return false;
    }
    if (!sql.row_lock_stamp.empty()) {
      client->execute(sql.row_lock_stamp.sql(), sql.row_lock_stamp_params(key, owner));
    }
    client->execute(sql.commit);
    return true;
  };
}

Operation dblock_operation(RowLock& lock, const KeySet& keys, int thread) {
  return [&lock, &keys, thread] {
    auto lease = lock.try_acquire(keys.pick(thread));
    if (!lease) return false;
    lease->release();
    return true;
  };
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  TransactionSql sql(ctx.dialect(), tables.names());
  const int max_threads = 8;
  KeySet keys("row:", max_threads, kKeysPerThread);
  auto pool = ctx.pool(max_threads);
  RowLock lock(*pool, {.tables = tables.names()});
  ctx.progress("row lock: creating " + std::to_string(max_threads * kKeysPerThread) + " key rows");
  keys.prepare(lock);

  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, max_threads}) {
    ctx.progress("row lock try_acquire+release, " + std::to_string(c) + " connection(s)");
    Comparison r = compare(
        s, c, [&](int i) { return raw_operation(ctx.target(), sql, keys, i); },
        [&](int i) { return dblock_operation(lock, keys, i); });
    ratio_headline(ctx, "row lock dblock/raw try+release, " + std::to_string(c) + " conn",
                   r.ratio());
    points.push_back(r.to_json());
  }

  ctx.progress("row lock hot key, " + std::to_string(kHotClients) + " clients");
  HotKeyResult hot = measure_hot_key(
      ctx, kHotClients,
      [&](ConnectionSource& source) {
        return std::make_unique<RowLock>(source, RowLockOptions{.tables = tables.names()});
      },
      true);
  nlohmann::json hot_json = hot.to_json("row_lock", kHotClients);
  ctx.headline(
      {.label = "row lock hot key handoff p50, " + std::to_string(kHotClients) + " clients",
       .value = hot_json["handoff"]["p50_ms"].get<double>(),
       .unit = "ms"});
  ctx.headline(
      {.label = "row lock hot key handoff p99, " + std::to_string(kHotClients) + " clients",
       .value = hot_json["handoff"]["p99_ms"].get<double>(),
       .unit = "ms"});
  ctx.headline(
      {.label = "row lock hot key acquisitions/s, " + std::to_string(kHotClients) + " clients",
       .value = hot.load.per_second(),
       .unit = "/s"});

  ctx.out()["row_lock"] = {
      {"what",
       "uncontended: try_acquire + release of a random key out of the thread's own " +
           std::to_string(kKeysPerThread) +
           " (their rows created before timing); raw = BEGIN, the rendered row lock "
           "statement(s), COMMIT from a plain client loop; ops_per_s counts try+release pairs. "
           "hot_key: as the unique-key hot key, with RowLock (the server wakes the next waiter "
           "at COMMIT)"},
      {"uncontended", {{"points", points}}},
      {"hot_key", {{"points", nlohmann::json::array({hot_json})}}}};
}

DBLOCK_BENCH_SCENARIO("row_lock", 15, run);

}  // namespace
}  // namespace dblock::bench
