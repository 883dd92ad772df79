// SPDX-License-Identifier: Apache-2.0
// Fenced transactions (dblock/fence.hpp): what a fence costs a short write transaction. Each
// thread holds a unique-key lease on a key of its own and, per operation, updates a row of its own
// in a transaction through dblock's pool: BEGIN, UPDATE, COMMIT (plain, the baseline) against
// BEGIN, fence(), UPDATE, COMMIT (fenced). ratio = fenced throughput / plain throughput; the fence
// adds one round trip (a locking read of the lease's row by its key) to three.
#include "../bench.hpp"
#include "../compare.hpp"
#include "dblock/fence.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

// Thread `i`'s operation: one transaction updating row i, fenced by `lease` when given.
Operation write_operation(Pool& pool, const std::string& table, int i, const Lease* lease,
                          bool postgresql) {
  const std::string update =
      "UPDATE " + table + " SET n = n + 1 WHERE id = " + std::string(postgresql ? "$1" : "?");
  return [&pool, update, i, lease] {
    auto conn = pool.acquire();
    conn->begin();
    if (lease != nullptr) fence(*lease, *conn);
    conn->execute(update, {Value(static_cast<std::int64_t>(i))});
    conn->commit();
    return true;
  };
}

nlohmann::json run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  const std::string table = tables.names().prefix() + "fenced_rows";
  tables.connection().execute("CREATE TABLE " + table +
                              " (id INT NOT NULL PRIMARY KEY, n BIGINT NOT NULL)");
  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, 8}) {
    ctx.progress("fenced transaction against a plain one, " + std::to_string(c) + " connection(s)");
    for (int i = 0; i < c; ++i) {
      tables.connection().execute("INSERT INTO " + table + " (id, n) VALUES (" + std::to_string(i) +
                                  ", 0)");
    }
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    std::vector<Lease> leases;
    for (int i = 0; i < c; ++i) {
      auto lease = lock.try_acquire("fenced:" + std::to_string(i));
      if (!lease) throw Error(ErrorCode::kFailedPrecondition, "a fresh key was busy");
      leases.push_back(std::move(*lease));
    }
    Comparison r = compare(
        s, c, [&](int i) { return write_operation(*pool, table, i, nullptr, ctx.postgresql()); },
        [&](int i) { return write_operation(*pool, table, i, &leases[i], ctx.postgresql()); });
    untargeted_ratio_headline(ctx, "fenced/plain write transaction, " + std::to_string(c) + " conn",
                              r.ratio());
    points.push_back(r.to_json());
    for (Lease& lease : leases) lease.release();
    tables.connection().execute("DELETE FROM " + table);
  }
  return points;
}

DBLOCK_BENCH_SCENARIO(
    "fencing", 17, run,
    "a transaction updating one row of the thread's own (BEGIN, UPDATE, COMMIT), fenced by a "
    "held unique-key lease (dblock::fence before the UPDATE) against the same transaction "
    "unfenced, both through dblock's pool; raw = unfenced");

}  // namespace
}  // namespace dblock::bench
