// SPDX-License-Identifier: Apache-2.0
// The reader-writer lock (ReadWriteLock), uncontended, at 1 and 8 connections:
// - reader().try_acquire + release of a random key: the permit acquire of a reader slot
//   (1..max_readers, refused while slot 0 is held), live_in_shared of slot 0 (its row
//   share-locked), release;
// - writer().try_acquire + release: the permit acquire of slot 0, live_in_exclusive of the reader
//   slots (their rows locked exclusively), release;
// each against a raw loop sending the same statements with the same parameters (PostgreSQL: the
// one acquire statement; MySQL: slots, then acquire_slot of a free slot of the range picked at
// random client-side); ratio = dblock / raw throughput (see compare.hpp). The 64 keys' limits
// (max_readers + 1) are stored before anything is timed, and thread i of c draws only from keys
// i, i + c, ..., so no two threads meet on a key (two writers would, and one would fail).
// Contended: 16 clients, each with a ReadWriteLock of its own (as processes would), one in four a
// writer, loop acquire(key, 2 s), hold ~1 ms, release, 2 ms of work, on one key, with release
// notifications (ReadWriteLockOptions::notify; PostgreSQL) and with polling only: the acquire wait
// p50/p99 of readers and writers; the headline is the wait's p99 polling / notified. A writer seen
// with another holder fails the run (a bug in the strategy).
#include "dblock/read_write_lock.hpp"

#include <atomic>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>

#include "../bench.hpp"
#include "../compare.hpp"
#include "../load.hpp"
#include "../lock_sql.hpp"
#include "../raw_client.hpp"
#include "../raw_permits.hpp"

namespace dblock::bench {
namespace {

constexpr int kKeys = 64;
constexpr int kMaxReaders = 100;  // ReadWriteLockOptions' default
constexpr std::int64_t kLimit = kMaxReaders + 1;
constexpr std::int64_t kTtlMs = 30'000;  // LockOptions' default TTL, which dblock sends
constexpr int kWriterSlot = 0;

// One side of the lock: the slots its acquire may take, and the slots whose live permits make
// it give its permit back.
struct Side {
  const char* name;  // "reader", "writer"
  SlotRange range;
  std::int64_t check_first, check_last;
  detail::Statement PermitSql::*check;  // the locking read of those slots
};

constexpr Side kReader{
    "reader", {1, kMaxReaders, kWriterSlot}, kWriterSlot, kWriterSlot, &PermitSql::live_in_shared};
constexpr Side kWriter{
    "writer", {kWriterSlot, kWriterSlot, -1}, 1, kMaxReaders, &PermitSql::live_in_exclusive};

std::vector<std::string> make_keys() {
  const std::string run = random_key("rw:");
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(run + ":" + std::to_string(i));
  return keys;
}

// A random key of thread `thread` of `threads`: one of keys thread, thread + threads, ...
const std::string& pick(const std::vector<std::string>& keys, int thread, int threads) {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  const std::size_t mine = (keys.size() - static_cast<std::size_t>(thread) + threads - 1) /
                           static_cast<std::size_t>(threads);
  return keys[static_cast<std::size_t>(thread) + (rng() % mine) * threads];
}

Operation raw_operation(const Target& target, const PermitSql& sql, const Side& side,
                        const std::vector<std::string>& keys, int thread, int threads) {
  auto client = std::shared_ptr<RawClient>(connect_raw(target.url));
  Owner owner = Owner::current_thread();
  return [client, &sql, &side, &keys, thread, threads, owner] {
    const std::string& key = pick(keys, thread, threads);
    const std::string lease_id = random_key("");
    const std::int64_t token =
        raw_take_permit(*client, sql, {key, kLimit, side.range, lease_id, owner, kTtlMs});
    if (token == 0) return false;
    if (raw_live_in(*client, sql, key, side.check_first, side.check_last, side.check) != 0) {
      raw_release_permit(*client, sql, key, owner, token, lease_id);
      return false;
    }
    return raw_release_permit(*client, sql, key, owner, token, lease_id);
  };
}

Operation dblock_operation(Lock& lock, const std::vector<std::string>& keys, int thread,
                           int threads) {
  return [&lock, &keys, thread, threads] {
    auto lease = lock.try_acquire(pick(keys, thread, threads));
    if (!lease) return false;
    return lease->release() == ReleaseOutcome::kReleased;
  };
}

constexpr int kContendedClients = 16;
constexpr auto kHold = std::chrono::milliseconds(1);
constexpr auto kBetween = std::chrono::milliseconds(2);  // work between holds, as semaphore.cpp's
constexpr auto kWait = std::chrono::seconds(2);

// One contended run (see the top), `notify` or polling only.
nlohmann::json contended(BenchContext& ctx, const TableNames& tables, bool notify) {
  using Clock = std::chrono::steady_clock;
  auto pool = ctx.pool(kContendedClients);
  std::vector<std::unique_ptr<ReadWriteLock>> locks;
  for (int i = 0; i < kContendedClients; ++i) {
    locks.push_back(std::make_unique<ReadWriteLock>(
        *pool, ReadWriteLockOptions{.tables = tables, .notify = notify}));
  }
  const std::string key = random_key("rw-hot:");
  std::atomic<int> readers{0}, writers{0}, overlaps{0};
  std::atomic<std::uint64_t> timed_out{0};
  std::vector<Latencies> waits(kContendedClients);
  LoadResult load = run_load(kContendedClients, ctx.settings().duration, [&](int i) -> Operation {
    const bool writer = i % 4 == 0;
    Lock& lock = writer ? locks[i]->writer() : locks[i]->reader();
    return [&, i, writer] {
      const auto asked = Clock::now();
      auto lease = lock.acquire(key, kWait);
      if (!lease) {
        timed_out.fetch_add(1);
        return false;
      }
      waits[i].add(std::chrono::duration<double, std::micro>(Clock::now() - asked).count());
      // From the grant to just before the release is sent: inside the lease's life.
      if (writer) {
        if (writers.fetch_add(1) != 0 || readers.load() != 0) overlaps.fetch_add(1);
      } else {
        readers.fetch_add(1);
        if (writers.load() != 0) overlaps.fetch_add(1);
      }
      std::this_thread::sleep_for(kHold);
      (writer ? writers : readers).fetch_sub(1);
      const bool released = lease->release() == ReleaseOutcome::kReleased;
      std::this_thread::sleep_for(kBetween);
      return released;
    };
  });
  if (overlaps.load() != 0) {
    const std::string message = "read_write_lock contended run: a writer held the key with " +
                                std::to_string(overlaps.load()) +
                                " other holders seen; this is a bug in the strategy";
    std::cerr << "dblock-bench: LIBRARY BUG: " << message << std::endl;
    throw std::runtime_error(message);
  }
  Latencies all, of_readers, of_writers;
  for (int i = 0; i < kContendedClients; ++i) {
    all.merge(waits[i]);
    (i % 4 == 0 ? of_writers : of_readers).merge(waits[i]);
  }
  return {{"clients", kContendedClients},
          {"writers", kContendedClients / 4},
          {"notify", notify},
          {"ops", load.ops},
          {"ops_per_s", load.per_second()},
          {"seconds", load.seconds},
          {"acquire_wait", all.summary_ms()},
          {"reader_wait", of_readers.summary_ms()},
          {"writer_wait", of_writers.summary_ms()},
          {"timed_out", timed_out.load()}};
}

void run(BenchContext& ctx) {
  const Settings& s = ctx.settings();
  ScopedTables tables(ctx.target().url);
  PermitSql sql(ctx.dialect(), tables.names());
  const std::vector<std::string> keys = make_keys();
  {
    ctx.progress("read_write_lock: storing the limits of " + std::to_string(kKeys) + " keys");
    auto pool = ctx.pool(1);
    Semaphore limits(*pool, static_cast<int>(kLimit), {.tables = tables.names()});
    for (const auto& key : keys) limits.set_limit(key);
  }

  nlohmann::json points = nlohmann::json::array();
  for (int c : {1, 8}) {
    auto pool = ctx.pool(c);
    ReadWriteLock lock(*pool, {.tables = tables.names(), .max_readers = kMaxReaders});
    for (const Side* side : {&kReader, &kWriter}) {
      const std::string name = side->name;
      ctx.progress("read_write_lock " + name + " try_acquire+release, " + std::to_string(c) +
                   " connection(s)");
      Lock& l = side == &kReader ? lock.reader() : lock.writer();
      Comparison r = compare(
          s, c, [&](int i) { return raw_operation(ctx.target(), sql, *side, keys, i, c); },
          [&](int i) { return dblock_operation(l, keys, i, c); });
      ratio_headline(ctx,
                     "dblock/raw rw " + name + " acquire+release, " + std::to_string(c) + " conn",
                     r.ratio());
      nlohmann::json point = r.to_json();
      point["side"] = name;
      points.push_back(point);
    }
  }
  ctx.section(
      "read_write_lock",
      "reader().try_acquire / writer().try_acquire + release of a random key out of " +
          std::to_string(kKeys) + " (max_readers " + std::to_string(kMaxReaders) +
          ", the limit stored before timing; thread i of c draws from keys i, i + c, ..., so no "
          "two threads meet on a key); raw = the same rendered statements and parameters from "
          "a plain client loop: the permit acquire (PostgreSQL: one statement; MySQL: slots, "
          "acquire_slot of a free slot of the range picked at random client-side) of slots 1.." +
          std::to_string(kMaxReaders) +
          " blocked by slot 0 (reader) or of slot 0 (writer), live_in_shared of slot 0 (reader) "
          "or live_in_exclusive of slots 1.." +
          std::to_string(kMaxReaders) +
          " (writer), release; ops_per_s counts acquire+release pairs; latency is of the pair",
      points);

  nlohmann::json runs = nlohmann::json::array();
  const bool notifies = ctx.dialect() == Dialect::kPostgreSQL;
  for (const bool notify : {true, false}) {
    if (!notify && !notifies) continue;  // the same run: MySQL has no notifications
    ctx.progress("read_write_lock contended, " + std::to_string(kContendedClients) +
                 " clients, a lock per client" + (notify ? "" : ", polling"));
    runs.push_back(contended(ctx, tables.names(), notify));
  }
  if (notifies) {
    wake_ratio_headline(ctx, "rw lock contended wait p99, polling / notified, lock per client",
                        runs[0], runs[1]);
  }
  ctx.out()["read_write_lock_contended"] = {
      {"what",
       "16 clients with a ReadWriteLock each, one in four a writer, loop acquire(key, 2 s), hold "
       "~1 ms, release, 2 ms of work, on one key; notify: waiters woken by release notifications "
       "(PostgreSQL), "
       "else polling with backoff only; acquire_wait is from the call to the grant"},
      {"runs", runs}};
}

DBLOCK_BENCH_SCENARIO("read_write_lock", 26, run);

}  // namespace
}  // namespace dblock::bench
