// Uncontended acquire + release on random keys: dblock's UniqueKeyLock against the identical
// statements sent by a raw client loop, at the same connection count (see compare.hpp).
#include "../bench.hpp"
#include "../compare.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

constexpr std::int64_t kTtlMs = 30'000;

Operation raw_operation(const Target& target, const LockSql& sql) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, owner] {
    std::string key = random_key("u:");
    RawResult r =
        client->execute(sql.acquire.sql(), sql.acquire_params(key, random_key(""), owner, kTtlMs));
    std::int64_t token = sql.dialect == Dialect::kPostgreSQL
                             ? (r.has_row ? r.first : 0)
                             : static_cast<std::int64_t>(r.insert_id);
    if (token == 0) return false;
    client->execute(sql.release.sql(),
                    sql.release_params(key, owner, token, "r-" + random_key("")));
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

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  LockSql sql(ctx.dialect(), tables.names());
  nlohmann::json points = nlohmann::json::array();
  for (int c : s.connections) {
    ctx.progress("uncontended acquire+release, " + std::to_string(c) + " connection(s)");
    auto pool = ctx.pool(c);
    UniqueKeyLock lock(*pool, {.tables = tables.names()});
    Comparison r = compare(
        s, c, [&](int) { return raw_operation(ctx.target(), sql); },
        [&](int) { return dblock_operation(lock); });
    if (c == 1 || c == 8) {
      ratio_headline(ctx, "dblock/raw acquire+release, " + std::to_string(c) + " conn", r.ratio());
    }
    points.push_back(r.to_json());
  }
  ctx.out()["uncontended"] = {
      {"what",
       "try_acquire + release of a fresh random key per operation; raw = the same two rendered "
       "statements and parameters from a plain client loop; ops_per_s counts acquire+release "
       "pairs; latency is of the pair"},
      {"points", points}};
}

DBLOCK_BENCH_SCENARIO("uncontended", 10, run);

}  // namespace
}  // namespace dblock::bench
