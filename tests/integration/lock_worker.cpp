// SPDX-License-Identifier: Apache-2.0
// A separate process for the multi-process lock tests (lock_process_test.cpp). Modes:
//
//   lock_worker count URL PREFIX KEY COUNTER_TABLE THREADS INCREMENTS OUT_FILE [STRATEGY]
//     THREADS threads each do INCREMENTS increments of a counter row under the lock, with a
//     deliberately non-atomic read - sleep - write, and write "token start_us end_us" per
//     critical section to OUT_FILE (system clock, microseconds; one file per process).
//     STRATEGY: "unique" (UniqueKeyLock, the default), "row" (RowLock) or "session"
//     (SessionLock).
//   lock_worker hold URL PREFIX KEY TTL_MS [LOCK_DELAY_MS]
//     Acquires KEY (auto-renewed; LockOptions::lock_delay LOCK_DELAY_MS, default 0), prints "token
//     <n> wall <its clock, s>" and waits. On SIGUSR1 it renews and releases, prints "renew=<0|1>
//     release=<outcome> lost=<0|1>" and exits.
//   lock_worker fence URL PREFIX KIND KEY TTL_MS TABLE FENCED WHEN
//     Acquires KEY (KIND "unique": UniqueKeyLock; "semaphore": Semaphore of 1 permit; "writer" or
//     "reader": that side of a ReadWriteLock of 2 readers; auto-renewed)
//     and prints "token <n>". Then writes one row (token, 'worker') into TABLE in a transaction,
//     fenced when FENCED is 1: WHEN "before" waits for SIGUSR1 before the transaction begins;
//     "inside" begins, fences, inserts, prints "fenced" and waits for SIGUSR1 before the commit.
//     Prints "commit=ok", "commit=lease_lost" (fence refused) or "commit=error <code>".
//
// URL carries ?driver= to pick the driver. Exit status 0 on success.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/fence.hpp"
#include "dblock/open.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/table_names.hpp"
#include "dblock/unique_key_lock.hpp"

namespace {

using namespace std::chrono;

std::int64_t now_us() {
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

int count_mode(int argc, char** argv) {
  auto url = dblock::DatabaseUrl::parse(argv[2]);
  dblock::TableNames tables(argv[3]);
  std::string key = argv[4];
  std::string counter = argv[5];
  int threads = std::stoi(argv[6]);
  int increments = std::stoi(argv[7]);
  std::ofstream out(argv[8]);
  auto pool = dblock::open_pool(url, {.max_size = static_cast<std::size_t>(threads) + 1});
  const std::string strategy = argc > 9 ? argv[9] : "unique";
  std::unique_ptr<dblock::Lock> strategy_lock;
  if (strategy == "row") {
    strategy_lock = std::make_unique<dblock::RowLock>(*pool, dblock::RowLockOptions{tables});
  } else if (strategy == "session") {
    strategy_lock =
        std::make_unique<dblock::SessionLock>(*pool, dblock::SessionLockOptions{tables});
  } else {
    dblock::UniqueKeyLockOptions options;
    options.tables = tables;
    options.backoff = {milliseconds(1), milliseconds(20), milliseconds(1)};
    strategy_lock = std::make_unique<dblock::UniqueKeyLock>(*pool, options);
  }
  dblock::Lock& lock = *strategy_lock;
  const bool pg = url.dialect == dblock::Dialect::kPostgreSQL;
  const std::string select = "SELECT n FROM " + counter + " WHERE id = 1";
  const std::string update =
      "UPDATE " + counter + " SET n = " + (pg ? "$1" : "?") + " WHERE id = 1";
  std::mutex out_mu;
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      try {
        for (int i = 0; i < increments; ++i) {
          auto lease = lock.acquire(key, seconds(60));
          if (!lease) throw std::runtime_error("no lock within 60 s");
          auto start = now_us();
          std::int64_t n = 0;
          {
            auto conn = pool->acquire();
            n = conn->execute(select).int64_at(0, "n");
          }
          std::this_thread::sleep_for(microseconds(500));  // widen the race window
          {
            auto conn = pool->acquire();
            conn->execute(update, {dblock::Value(n + 1)});
          }
          auto end = now_us();
          auto token = lease->fencing_token();
          if (lease->release() != dblock::ReleaseOutcome::kReleased) {
            throw std::runtime_error("release did not free the key");
          }
          std::lock_guard lock_out(out_mu);
          out << token << ' ' << start << ' ' << end << '\n';
        }
      } catch (const std::exception& e) {
        std::cerr << "lock_worker: " << e.what() << '\n';
        failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  return failed ? 1 : 0;
}

std::atomic<bool> g_usr1{false};

int hold_mode(int argc, char** argv) {
  auto url = dblock::DatabaseUrl::parse(argv[2]);
  auto pool = dblock::open_pool(url, {.max_size = 2});
  dblock::UniqueKeyLockOptions options;
  options.tables = dblock::TableNames(argv[3]);
  dblock::UniqueKeyLock lock(*pool, options);
  dblock::LockOptions lo;
  lo.ttl = milliseconds(std::stoll(argv[5]));
  if (argc > 6) lo.lock_delay = milliseconds(std::stoll(argv[6]));
  lo.owner = dblock::Owner::named("worker");
  auto lease = lock.try_acquire(argv[4], lo);
  if (!lease) {
    std::printf("busy\n");
    return 3;
  }
  std::printf("token %lld wall %lld\n", static_cast<long long>(lease->fencing_token()),
              static_cast<long long>(
                  duration_cast<seconds>(system_clock::now().time_since_epoch()).count()));
  std::fflush(stdout);
  signal(SIGUSR1, [](int) { g_usr1 = true; });
  while (!g_usr1) std::this_thread::sleep_for(milliseconds(10));
  bool renewed = lease->renew();
  bool lost = lease->lost();
  auto outcome = lease->release();
  std::printf("renew=%d release=%s lost=%d\n", renewed ? 1 : 0,
              std::string(dblock::to_string(outcome)).c_str(), lost ? 1 : 0);
  return 0;
}

void wait_for_usr1() {
  while (!g_usr1) std::this_thread::sleep_for(milliseconds(5));
}

int fence_mode(char** argv) {
  signal(SIGUSR1, [](int) { g_usr1 = true; });  // before "token": the test signals after it
  auto url = dblock::DatabaseUrl::parse(argv[2]);
  auto pool = dblock::open_pool(url, {.max_size = 3});
  const dblock::TableNames tables(argv[3]);
  const std::string kind = argv[4];
  dblock::LockOptions lo;
  lo.ttl = milliseconds(std::stoll(argv[6]));
  lo.owner = dblock::Owner::named("worker");
  const std::string table = argv[7];
  const bool fenced = std::string(argv[8]) == "1";
  const bool inside = std::string(argv[9]) == "inside";
  std::unique_ptr<dblock::Lock> lock;
  std::unique_ptr<dblock::ReadWriteLock> rw;
  if (kind == "semaphore") {
    lock = std::make_unique<dblock::Semaphore>(*pool, 1, dblock::SemaphoreOptions{tables});
  } else if (kind == "writer" || kind == "reader") {
    dblock::ReadWriteLockOptions options;
    options.tables = tables;
    options.max_readers = 2;
    rw = std::make_unique<dblock::ReadWriteLock>(*pool, options);
  } else {
    lock = std::make_unique<dblock::UniqueKeyLock>(*pool, dblock::UniqueKeyLockOptions{tables});
  }
  dblock::Lock& locks = !rw ? *lock : kind == "writer" ? rw->writer() : rw->reader();
  auto lease = locks.try_acquire(argv[5], lo);
  if (!lease) {
    std::printf("busy\n");
    return 3;
  }
  std::printf("token %lld\n", static_cast<long long>(lease->fencing_token()));
  std::fflush(stdout);
  if (!inside) wait_for_usr1();
  auto conn = pool->acquire();
  const char* param = url.dialect == dblock::Dialect::kPostgreSQL ? "$1" : "?";
  try {
    conn->begin();
    if (fenced) dblock::fence(*lease, *conn);
    conn->execute("INSERT INTO " + table + " (token, writer) VALUES (" + param + ", 'worker')",
                  {dblock::Value(lease->fencing_token())});
    if (inside) {
      std::printf("fenced\n");
      std::fflush(stdout);
      wait_for_usr1();
    }
    conn->commit();
    std::printf("commit=ok\n");
  } catch (const dblock::Error& e) {
    conn->rollback();
    if (e.code() == dblock::ErrorCode::kLeaseLost) {
      std::printf("commit=lease_lost\n");
    } else {
      std::printf("commit=error %s: %s\n", std::string(dblock::to_string(e.code())).c_str(),
                  e.what());
    }
  }
  std::fflush(stdout);
  lease->release();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "count" && (argc == 9 || argc == 10)) return count_mode(argc, argv);
    if (mode == "hold" && (argc == 6 || argc == 7)) return hold_mode(argc, argv);
    if (mode == "fence" && argc == 10) return fence_mode(argv);
    std::cerr << "usage: lock_worker count|hold|fence ...\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "lock_worker: " << e.what() << '\n';
    return 1;
  }
}
