// Hot key: 8 to 64 clients contend for one key with blocking acquire. Throughput, handoff latency
// (from the moment the holder starts its release to the moment the next client holds the key),
// statements sent per successful acquisition (counted on the connections, tries and releases
// alike) and fairness (most / fewest acquisitions per client). On PostgreSQL with LISTEN/NOTIFY
// wake-ups and with polling only; MySQL always polls.
#include "../hot_key.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "../bench.hpp"
#include "../counting_source.hpp"
#include "../load.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {

void GrantLog::granted(int i) {
  auto now = std::chrono::steady_clock::now();
  std::int64_t from = release_started_.load();
  const bool same = holder_.exchange(i) == i;
  grants_[i].emplace_back(
      now, same        ? -2.0
           : from == 0 ? -1.0
                       : static_cast<double>(now.time_since_epoch().count() - from) / 1000.0);
}

std::chrono::steady_clock::time_point GrantLog::releasing() {
  auto now = std::chrono::steady_clock::now();
  release_started_.store(now.time_since_epoch().count());
  return now;
}

void GrantLog::released(int i, std::chrono::steady_clock::time_point started) {
  auto now = std::chrono::steady_clock::now();
  releases_[i].emplace_back(now, std::chrono::duration<double, std::micro>(now - started).count());
}

HotKeyResult GrantLog::summarize(LoadResult load) const {
  HotKeyResult out;
  const auto end = load.started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(load.seconds));
  load.ops = 0;
  load.ops_per_thread.assign(grants_.size(), 0);
  for (std::size_t i = 0; i < grants_.size(); ++i) {
    for (auto [when, us] : grants_[i]) {
      if (when < load.started || when > end) continue;
      ++load.ops;
      ++load.ops_per_thread[i];
      if (us >= 0) out.handoff.add(us);
      if (us == -2.0) out.reacquired += 1;
    }
    for (auto [when, us] : releases_[i]) {
      if (when >= load.started && when <= end) out.release.add(us);
    }
  }
  if (load.ops > 0) out.reacquired /= static_cast<double>(load.ops);
  out.load = std::move(load);
  return out;
}

HotKeyResult measure_hot_key(BenchContext& ctx, const TableNames& tables, int clients,
                             UniqueKeyLockOptions options) {
  options.tables = tables;
  return measure_hot_key(
      ctx, clients,
      [&](ConnectionSource& source) { return std::make_unique<UniqueKeyLock>(source, options); },
      false);
}

HotKeyResult measure_hot_key(
    BenchContext& ctx, int clients,
    const std::function<std::unique_ptr<Lock>(ConnectionSource&)>& make_lock, bool prime) {
  auto pool = ctx.pool(clients);
  CountingSource counting(*pool);
  std::unique_ptr<Lock> lock = make_lock(counting);
  const std::string key = random_key("hot:");
  if (prime) {
    auto lease = lock->try_acquire(key);
    if (!lease) throw std::runtime_error("hot key: the fresh key " + key + " is already held");
    lease->release();
    counting.reset();
  }
  std::atomic<std::uint64_t> acquisitions{0};
  GrantLog log(clients);
  LoadResult load = run_load(clients, ctx.settings().duration, [&](int i) -> Operation {
    return [&, i] {
      auto lease = lock->acquire(key, std::chrono::seconds(10));
      if (!lease) return false;
      log.granted(i);
      acquisitions.fetch_add(1);
      auto releasing = log.releasing();
      lease->release();
      log.released(i, releasing);
      return true;
    };
  });
  HotKeyResult out = log.summarize(std::move(load));
  // Statements and acquisitions over the whole run (warm-up included), so they match.
  out.statements_per_acquisition = static_cast<double>(counting.statements()) /
                                   static_cast<double>(std::max<std::uint64_t>(acquisitions, 1));
  return out;
}

nlohmann::json HotKeyResult::to_json(const std::string& mode, int clients) {
  auto [lo, hi] = std::minmax_element(load.ops_per_thread.begin(), load.ops_per_thread.end());
  nlohmann::json j{{"mode", mode},
                   {"clients", clients},
                   {"acquisitions", load.ops},
                   {"acquisitions_per_s", load.per_second()},
                   {"handoff", handoff.summary_ms()},
                   {"release", release.summary_ms()},
                   {"reacquired_by_previous_holder", reacquired},
                   {"statements_per_acquisition", statements_per_acquisition},
                   {"fewest_per_client", *lo},
                   {"most_per_client", *hi}};
  j["fairness_max_over_min"] =
      *lo == 0 ? nlohmann::json(nullptr)
               : nlohmann::json(static_cast<double>(*hi) / static_cast<double>(*lo));
  return j;
}

namespace {

void run(BenchContext& ctx) {
  ScopedTables tables(ctx.target().url);
  nlohmann::json points = nlohmann::json::array();
  std::vector<std::pair<std::string, bool>> modes;
  if (ctx.postgresql()) {
    modes = {{"notify", true}, {"polling", false}};
  } else {
    modes = {{"polling", false}};
  }
  for (int clients : ctx.settings().hot_clients) {
    for (const auto& [mode, notify] : modes) {
      ctx.progress("hot key, " + mode + ", " + std::to_string(clients) + " clients");
      HotKeyResult r = measure_hot_key(ctx, tables.names(), clients, {.notify = notify});
      nlohmann::json j = r.to_json(mode, clients);
      if (clients == ctx.settings().hot_clients.front()) {
        double p50 = j["handoff"]["p50_ms"].get<double>();
        bool pg_notify = ctx.postgresql() && notify;
        ctx.headline(
            {.label = "hot key handoff p50, " + mode + ", " + std::to_string(clients) + " clients",
             .value = p50,
             .unit = "ms",
             .target = pg_notify ? "< 2 ms" : "",
             .met = pg_notify ? (p50 < 2.0 ? 1 : 0) : -1});
      }
      points.push_back(std::move(j));
    }
  }
  ctx.out()["hot_key"] = {
      {"what",
       "N clients loop acquire(key, 10 s) + release on one key; handoff = a grant to another "
       "client minus the previous holder's release start (a holder re-taking the key at once is "
       "counted in reacquired_by_previous_holder, not as a handoff); statements_per_acquisition "
       "counts every statement "
       "(tries and the release) over successful acquisitions"},
      {"points", points}};
}

DBLOCK_BENCH_SCENARIO("hot_key", 30, run);

}  // namespace
}  // namespace dblock::bench
