// SPDX-License-Identifier: Apache-2.0
// Leader election (dblock/election.hpp): how long a name is without a leader.
//  - After a resign: two candidates in this process, each with a pool of its own, lead in turn;
//    each term's work holds the name 100 ms (so the other is waiting in campaign() by then) and
//    returns. Takeover = from the moment the work returned to the moment the other candidate's
//    work starts: the release, its notification (PostgreSQL) or the next poll (MySQL, MariaDB),
//    the winning insert.
//  - After a hand-off: three candidates, each term's work hands the name to the next one named
//    after 100 ms (Term::hand_off). Takeover = from the work's return to the named candidate's
//    work starting; the name is never free meanwhile (the hand-off moves its row in one
//    statement).
//  - After a crash: a holder takes the name with a 1.3 s lease and never renews or releases it (a
//    process killed with SIGKILL, or paused with SIGSTOP, looks the same to the others); a
//    candidate waiting in campaign() leads once the lease has run out. Reported as the time past
//    the TTL, counted from when the holder's acquire returned.
// Beside them, the documented defaults of other elections (docs/benchmarks.md has the sources).
#include "dblock/election.hpp"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "../bench.hpp"
#include "../load.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

ElectionOptions candidate(const TableNames& tables, const std::string& name) {
  ElectionOptions o;
  o.candidate = name;
  o.ttl = 10s;
  o.rejoin_after = 50ms;  // shorter than a term: the other candidate always waits for the name
  o.tables = tables;
  return o;
}

// `handovers` resigns between two candidates; the takeover of each, in microseconds.
Latencies after_resign(BenchContext& ctx, const TableNames& tables, int handovers) {
  auto pool_a = ctx.pool(2);
  auto pool_b = ctx.pool(2);
  Election a(*pool_a, "election:resign", candidate(tables, "a"));
  Election b(*pool_b, "election:resign", candidate(tables, "b"));
  std::stop_source stop;
  std::mutex mu;
  Latencies takeovers;
  std::optional<Clock::time_point> resigned;  // under mu
  int terms = 0;                              // under mu
  auto lead = [&](const Term& term) {
    {
      std::lock_guard lock(mu);
      if (resigned) takeovers.add(ms_between(*resigned, Clock::now()) * 1000);
      if (++terms > handovers) {
        stop.request_stop();
        return;
      }
    }
    std::this_thread::sleep_for(100ms);
    if (term.stop_token().stop_requested()) return;
    std::lock_guard lock(mu);
    resigned = Clock::now();
  };
  std::jthread ta([&] { a.campaign(lead, stop.get_token()); });
  std::jthread tb([&] { b.campaign(lead, stop.get_token()); });
  ta.join();
  tb.join();
  return takeovers;
}

// `handoffs` planned hand-overs (Term::hand_off) around three candidates, each to the next one
// named (a to b, b to c, c to a): the time from the work's return to the named candidate's work
// starting, in µs, and how many terms went to another than the one named.
struct HandOffs {
  Latencies gaps;
  int elsewhere = 0;
};
HandOffs after_hand_off(BenchContext& ctx, const TableNames& tables, int handoffs) {
  const std::vector<std::string> names{"a", "b", "c"};
  std::vector<std::unique_ptr<Pool>> pools;
  std::vector<std::unique_ptr<Election>> elections;
  for (const auto& name : names) {
    pools.push_back(ctx.pool(2));
    elections.push_back(
        std::make_unique<Election>(*pools.back(), "election:hand-off", candidate(tables, name)));
  }
  std::stop_source stop;
  std::mutex mu;
  HandOffs out;
  std::optional<Clock::time_point> handed;  // under mu
  std::string named;                        // under mu
  int terms = 0;                            // under mu
  std::vector<std::jthread> threads;
  for (std::size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      elections[i]->campaign(
          [&](const Term& term) {
            {
              std::lock_guard lock(mu);
              if (handed) {
                out.gaps.add(ms_between(*handed, Clock::now()) * 1000);
                if (named != names[i]) ++out.elsewhere;
              }
              if (++terms > handoffs) {
                stop.request_stop();
                return;
              }
            }
            std::this_thread::sleep_for(100ms);
            if (term.stop_token().stop_requested()) return;
            std::lock_guard lock(mu);
            named = names[(i + 1) % names.size()];
            term.hand_off(named);
            handed = Clock::now();
          },
          stop.get_token());
    });
  }
  threads.clear();
  return out;
}

// Not a multiple of the candidates' 1 s acquire slice: a slice ending as the lease runs out would
// hide how long a waiting candidate takes to notice.
constexpr auto kCrashTtl = 1300ms;

// `rounds` crashed holders; the time past their TTL until a waiting candidate led, in µs.
Latencies after_crash(BenchContext& ctx, const TableNames& tables, int rounds) {
  auto holder_pool = ctx.pool(1);
  auto pool = ctx.pool(2);
  UniqueKeyLock holder(*holder_pool, {.tables = tables});
  Latencies late;
  for (int round = 0; round < rounds; ++round) {
    const std::string name = "election:crash:" + std::to_string(round);
    LockOptions held;
    held.ttl = kCrashTtl;
    held.auto_renew = false;
    held.owner = Owner::named("crashed");
    std::optional<Lease> lease = holder.try_acquire(name, held);
    const Clock::time_point crashed = Clock::now();
    if (!lease) throw Error(ErrorCode::kFailedPrecondition, "a fresh election name was busy");
    // Never renewed, never released: kept alive and forgotten until the round is over.
    Election waiting(*pool, name, candidate(tables, "waiting"));
    std::stop_source stop;
    waiting.campaign(
        [&](const Term&) {
          late.add((ms_between(crashed, Clock::now()) - static_cast<double>(kCrashTtl.count())) *
                   1000);
          stop.request_stop();
        },
        stop.get_token());
    lease->release();  // taken over: the release finds it gone
  }
  return late;
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  const int handovers = s.quick ? 20 : 100;
  const int crashes = s.quick ? 2 : 5;
  ctx.progress("election: " + std::to_string(handovers) + " resigns between two candidates");
  Latencies resign = after_resign(ctx, tables.names(), handovers);
  ctx.progress("election: " + std::to_string(handovers) + " hand-offs around three candidates");
  HandOffs handoffs = after_hand_off(ctx, tables.names(), handovers);
  ctx.progress("election: " + std::to_string(crashes) + " crashed leaders, 1.3 s TTL");
  Latencies crash = after_crash(ctx, tables.names(), crashes);
  const double resign_p50 = resign.percentile(50);
  // PostgreSQL wakes the waiting candidate by a notification; MySQL and MariaDB poll (25 ms).
  const double target_ms = ctx.postgresql() ? 5 : 50;
  ctx.section("election",
              "how long a name is without a leader: after a resign (the leader's work returns; "
              "the next candidate waits in campaign()), and past the TTL after a crash (a holder "
              "that never renews or releases, as after SIGKILL or SIGSTOP; 1.3 s TTL). Documented "
              "defaults elsewhere: client-go leaderelection lease 15 s, retry 2 s; Spring "
              "Integration and userver polls of 100 ms; Consul lock-delay 15 s",
              nlohmann::json::array({{{"after", "resign"}, {"takeover", resign.summary_ms()}},
                                     {{"after", "hand-off to a named candidate"},
                                      {"takeover", handoffs.gaps.summary_ms()},
                                      {"went_elsewhere", handoffs.elsewhere}},
                                     {{"after", "crash, past the TTL"},
                                      {"ttl_ms", kCrashTtl.count()},
                                      {"takeover", crash.summary_ms()}}}));
  ctx.headline({.label = "election takeover after resign, p50",
                .value = resign_p50 / 1000,
                .unit = "ms",
                .target = "< 5 ms PostgreSQL, < 50 ms MySQL",
                .met = resign_p50 / 1000 < target_ms ? 1 : 0});
  ctx.headline({.label = "election takeover after resign, p99",
                .value = resign.percentile(99) / 1000,
                .unit = "ms"});
  ctx.headline({.label = "election hand-off to a named candidate, p50 (the name never free)",
                .value = handoffs.gaps.percentile(50) / 1000,
                .unit = "ms"});
  ctx.headline({.label = "election hand-offs that went elsewhere than named",
                .value = static_cast<double>(handoffs.elsewhere),
                .unit = "terms",
                .target = "0",
                .met = handoffs.elsewhere == 0 ? 1 : 0});
  ctx.headline({.label = "election takeover past a crash's TTL, p50",
                .value = crash.percentile(50) / 1000,
                .unit = "ms"});
}

DBLOCK_BENCH_SCENARIO("election", 35, run);

}  // namespace
}  // namespace dblock::bench
