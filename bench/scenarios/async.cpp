// SPDX-License-Identifier: Apache-2.0
// Acquires that don't hold a thread (dblock/async_lock.hpp): uncontended acquire + release of a
// fresh key through AsyncLock (future) against the blocking acquire of the same UniqueKeyLock, in
// pairs of rounds (compare.hpp), with the first try in the caller and on the AsyncLock's threads;
// then ten thousand acquires of keys another owner holds, pending at once on two threads: the
// process's threads and the heap in use while they wait, and how soon a pending acquire takes a
// key its holder released (the release nudges it; its waits of 10 to 20 s are a safety net).
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../lock_sql.hpp"
#include "dblock/async_lock.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::bench {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A field of /proc/self/status ("Threads").
std::int64_t status_field(const std::string& name) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  }
  return -1;
}

Operation blocking_operation(UniqueKeyLock& lock) {
  return [&lock] {
    auto lease = lock.acquire(random_key("a:"), milliseconds(5000));
    if (!lease) return false;
    lease->release();
    return true;
  };
}

Operation async_operation(AsyncLock& async) {
  return [&async] {
    auto lease = async.acquire(random_key("a:"), milliseconds(5000)).get();
    if (!lease) return false;
    lease->release();
    return true;
  };
}

nlohmann::json uncontended(BenchContext& ctx, const TableNames& tables) {
  nlohmann::json points = nlohmann::json::array();
  for (const bool in_caller : {true, false}) {
    for (int c : {1, 8}) {
      const std::string where = in_caller ? "first try in caller" : "first try on its threads";
      ctx.progress("uncontended async acquire+release, " + where + ", " + std::to_string(c) +
                   " connection(s)");
      auto pool = ctx.pool(c);
      UniqueKeyLock lock(*pool, {.tables = tables});
      AsyncLock async(lock, {.threads = 2, .backoff = {}, .first_try_in_caller = in_caller});
      Comparison r = compare(
          ctx.settings(), c, [&](int) { return blocking_operation(lock); },
          [&](int) { return async_operation(async); });
      const std::string label =
          "async/blocking acquire+release, " + where + ", " + std::to_string(c) + " conn";
      if (in_caller) {
        ratio_headline(ctx, label, r.ratio());
      } else {
        untargeted_ratio_headline(ctx, label, r.ratio());
      }
      nlohmann::json point = r.to_json();
      point["first_try_in_caller"] = in_caller;
      points.push_back(std::move(point));
    }
  }
  return points;
}

nlohmann::json pending(BenchContext& ctx, const TableNames& tables) {
  constexpr int kKeys = 10000;
  constexpr int kFreed = 100;
  auto pool = ctx.pool(8);
  UniqueKeyLock lock(*pool, {.tables = tables});
  ctx.progress("ten thousand keys held by another owner");
  LockOptions holder;
  holder.owner = Owner::named("holder");
  holder.ttl = std::chrono::minutes(10);
  holder.auto_renew = false;
  std::vector<Lease> held;
  held.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    auto lease = lock.try_acquire("p:" + std::to_string(i), holder);
    if (!lease) throw std::runtime_error("a fresh key was refused");
    held.push_back(std::move(*lease));
  }
  ctx.progress("ten thousand acquires pending on two threads");
  const std::int64_t threads_before = status_field("Threads");
  const auto heap_before = static_cast<std::int64_t>(::mallinfo2().uordblks);
  // Waits of 10 to 20 s between tries: a release through the lock (here, the same lock object;
  // on PostgreSQL, any) nudges its waiter at once, so the tries between are only a safety net, and
  // ten thousand waiters send about 670 statements a second.
  const AsyncLockOptions options{.threads = 2,
                                 .backoff = {.initial = milliseconds(10000),
                                             .max_delay = milliseconds(20000),
                                             .min_sleep = milliseconds(10000)},
                                 .first_try_in_caller = false};
  // Written by the callback before it counts `ended`, read here after `ended` says so.
  std::vector<Clock::time_point> taken_at(kKeys);
  std::vector<Clock::time_point> freed_at(kKeys);
  std::atomic<int> ended{0};
  nlohmann::json out;
  {
    AsyncLock async(lock, options);
    LockOptions waiter;
    waiter.owner = Owner::named("waiter");
    waiter.auto_renew = false;
    const auto submit_start = Clock::now();
    for (int i = 0; i < kKeys; ++i) {
      async.acquire("p:" + std::to_string(i), std::chrono::minutes(1), waiter,
                    [&, i](std::optional<Lease> lease, std::exception_ptr) {
                      if (lease) {
                        taken_at[static_cast<std::size_t>(i)] = Clock::now();
                        lease->release();
                      }
                      ++ended;
                    });
    }
    const double submit_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - submit_start).count();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // every one tried at least once
    const std::size_t still_pending = async.pending();
    const std::int64_t threads_waiting = status_field("Threads");
    const auto heap_waiting = static_cast<std::int64_t>(::mallinfo2().uordblks);
    ctx.progress("a hundred of the held keys released");
    for (int i = 0; i < kFreed; ++i) {
      const auto at = static_cast<std::size_t>(i * (kKeys / kFreed));
      freed_at[at] = Clock::now();
      held[at].release();
    }
    for (int i = 0; i < 100 && ended.load() < kFreed; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
    }
    std::vector<double> after_ms;
    for (std::size_t i = 0; i < taken_at.size(); ++i) {
      if (taken_at[i] != Clock::time_point()) {
        after_ms.push_back(
            std::chrono::duration<double, std::milli>(taken_at[i] - freed_at[i]).count());
      }
    }
    std::sort(after_ms.begin(), after_ms.end());
    auto pct = [&](double p) {
      if (after_ms.empty()) return -1.0;
      return after_ms[std::min(after_ms.size() - 1,
                               static_cast<std::size_t>(p * static_cast<double>(after_ms.size())))];
    };
    ctx.headline({.label = "async: process threads with 10,000 acquires pending",
                  .value = static_cast<double>(threads_waiting),
                  .unit = "threads",
                  .target = "< 16",
                  .met = threads_waiting < 16 ? 1 : 0});
    ctx.headline({.label = "async: memory per pending acquire",
                  .value = static_cast<double>(heap_waiting - heap_before) / kKeys,
                  .unit = "bytes"});
    ctx.headline({.label = "async: a released key taken by its pending acquire, p50",
                  .value = pct(0.5),
                  .unit = "ms"});
    out = {{"pending", kKeys},
           {"still_pending_after_3s", still_pending},
           {"submit_ms", submit_ms},
           {"threads_before", threads_before},
           {"threads_while_pending", threads_waiting},
           {"heap_in_use_before_bytes", heap_before},
           {"heap_in_use_while_pending_bytes", heap_waiting},
           {"released", kFreed},
           {"taken", after_ms.size()},
           {"taken_after_release_ms", {{"p50", pct(0.5)}, {"p99", pct(0.99)}}},
           {"backoff_ms", {{"min_sleep", 10000}, {"initial", 10000}, {"max_delay", 20000}}}};
  }  // the AsyncLock ends the rest with nothing
  for (Lease& lease : held) {
    if (lease) lease.release();
  }
  return out;
}

void run(BenchContext& ctx) {
  ScopedTables tables(ctx.target().url);
  nlohmann::json points = uncontended(ctx, tables.names());
  ctx.section("async_uncontended",
              "acquire + release of a fresh random key per operation through AsyncLock::acquire "
              "(a future, waited for at once; the 'dblock' side) against UniqueKeyLock::acquire "
              "(the 'raw' side), with the first try in the calling thread and on the AsyncLock's "
              "two threads",
              points);
  ctx.out()["async_pending"] = pending(ctx, tables.names());
}

DBLOCK_BENCH_SCENARIO("async", 48, run);

}  // namespace
}  // namespace dblock::bench
