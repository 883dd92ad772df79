// SPDX-License-Identifier: Apache-2.0
// The other processes of the fault suite. Every mode writes its history (history.hpp) to
// HISTORY as client CLIENT; STRATEGY names an entry of strategies.hpp; URL carries ?driver=.
//
//   fault_worker hold STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT
//     Acquires KEY (waiting up to 30 s), renews it every TTL/3, prints "token <n> wall <its
//     clock, s>" and waits; prints "lost_at <us> valid_until <us>" (monotonic) if the lease turns
//     lost meanwhile. On SIGUSR1 it makes a fenced write with its token, renews, releases,
//     prints "fenced=<rows> renew=<0|1> release=<outcome> lost=<0|1>" and exits.
//   fault_worker loop STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT SECONDS
//     For SECONDS: acquires KEY (waiting up to 1 s), makes a fenced write, releases; then takes
//     and releases a key of its own (KEY-CLIENT-<n>) once. Faults are counted and retried after
//     50 ms. Prints "acquired=<n> released=<n> errors=<n> fenced_rejected=<n> conflicts=<n>
//     in_doubt=<n>" at the end.
//
// For a transactional strategy (row lock, optimistic) the write is the critical section's, in
// the lease's own transaction: hold inserts a row (id = its pid, writer = CLIENT) right after
// acquiring, and on SIGUSR1 increments the resource counter (resource.hpp) instead of the fenced
// write; loop increments the counter under KEY. Their release commits (or, optimistic, reports a
// conflict and rolls back). A release of KEY that fails is counted in errors and in in_doubt:
// its commit may have reached the server before the connection broke.
//
// A URL without a password takes it from DBLOCK_PASSWORD (DatabaseUrl::resolve).
//
// The fenced write: UPDATE <prefix>resource SET token = <token>, writer = CLIENT WHERE id = 1
// AND token < <token> (the table is the test's). Exit status 0 unless a mode could not run.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "dblock/table_names.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"
#include "strategies.hpp"

namespace {

using namespace std::chrono;
using dblock::testing::HistoryWriter;
using dblock::testing::RecordedHolder;

std::atomic<bool> g_usr1{false};

struct Args {
  const dblock::testing::StrategyUnderTest& strategy;
  dblock::DatabaseUrl url;
  dblock::TableNames tables;
  std::string key;
  milliseconds ttl;
  std::string history;
  std::string client;
};

Args parse(char** argv) {
  return Args{dblock::testing::strategy_named(argv[2]),
              dblock::DatabaseUrl::resolve(std::string(argv[3])),
              dblock::TableNames(argv[4]),
              argv[5],
              milliseconds(std::stoll(argv[6])),
              argv[7],
              argv[8]};
}

// Rows changed by the fenced write (1: accepted, 0: a higher token wrote first).
std::uint64_t fenced_write(dblock::ConnectionSource& source, const Args& a, std::int64_t token) {
  const bool pg = a.url.dialect == dblock::Dialect::kPostgreSQL;
  auto conn = source.acquire();
  std::string table = a.tables.qualified(a.url.dialect, "resource");
  return conn
      ->execute("UPDATE " + table + " SET token = " + (pg ? "$1" : "?") + ", writer = " +
                    (pg ? "$2" : "?") + " WHERE id = 1 AND token < " + (pg ? "$3" : "?"),
                {dblock::Value(token), dblock::Value(a.client), dblock::Value(token)})
      .affected_rows();
}

int hold_mode(char** argv) {
  Args a = parse(argv);
  auto pool = dblock::open_pool(a.url, {.max_size = 2});
  auto lock = a.strategy.make(*pool, a.tables);
  HistoryWriter history(a.history);
  RecordedHolder holder(*lock, history, a.client, a.key, a.ttl);
  if (!holder.acquire(seconds(30))) {
    std::printf("busy\n");
    return 3;
  }
  if (a.strategy.transactional) {
    holder.in_transaction([&](dblock::Connection& c) {
      dblock::testing::insert_mark(c, a.tables, ::getpid(), a.client);
      return 0;
    });
  }
  std::printf("token %lld wall %lld\n", static_cast<long long>(holder.token()),
              static_cast<long long>(
                  duration_cast<seconds>(system_clock::now().time_since_epoch()).count()));
  std::fflush(stdout);
  signal(SIGUSR1, [](int) { g_usr1 = true; });
  bool reported_lost = false;
  while (!g_usr1) {
    // Says when the lease turned lost (monotonic microseconds) and when its TTL since the last
    // successful renewal ran out, even while a renewal hangs on a dead network.
    if (!reported_lost && holder.lost()) {
      reported_lost = true;
      std::printf("lost_at %lld valid_until %lld\n",
                  static_cast<long long>(dblock::testing::monotonic_us()),
                  static_cast<long long>(holder.valid_until_us()));
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  auto fenced = a.strategy.transactional ? holder.in_transaction([&](dblock::Connection& c) {
    return dblock::testing::increment_counter(c, a.tables, a.client);
  })
                                         : fenced_write(*pool, a, holder.token());
  bool renewed = holder.renew_now();
  bool lost = holder.lost();
  std::string outcome = holder.release();
  std::printf("fenced=%llu renew=%d release=%s lost=%d\n", static_cast<unsigned long long>(fenced),
              renewed ? 1 : 0, outcome.c_str(), lost ? 1 : 0);
  return 0;
}

int loop_mode(char** argv) {
  // SIGUSR1 ends the loop early (the test sends it once the clients have had their time after a
  // restart, however long the restart took); SECONDS is the upper bound.
  signal(SIGUSR1, [](int) { g_usr1 = true; });
  Args a = parse(argv);
  const auto deadline = steady_clock::now() + seconds(std::stoll(argv[9]));
  auto pool = dblock::open_pool(a.url, {.max_size = 2});
  auto lock = a.strategy.make(*pool, a.tables);
  HistoryWriter history(a.history);
  long acquired = 0, released = 0, errors = 0, rejected = 0, conflicts = 0, in_doubt = 0, n = 0;
  while (!g_usr1 && steady_clock::now() < deadline) {
    try {
      {
        RecordedHolder shared(*lock, history, a.client, a.key, a.ttl);
        if (shared.acquire(seconds(1))) {
          ++acquired;
          if (a.strategy.transactional) {
            shared.in_transaction([&](dblock::Connection& c) {
              return dblock::testing::increment_counter(c, a.tables, a.client);
            });
          } else if (fenced_write(*pool, a, shared.token()) == 0) {
            ++rejected;
          }
          std::this_thread::sleep_for(milliseconds(2));
          std::string outcome = shared.release();
          if (outcome == "released") ++released;
          if (outcome == "conflict") ++conflicts;
          if (outcome == "error") ++errors, ++in_doubt;
        }
      }
      RecordedHolder own(*lock, history, a.client,
                         a.key + "-" + a.client + "-" + std::to_string(n++), a.ttl);
      if (own.acquire(milliseconds(0))) {
        std::string outcome = own.release();
        if (outcome == "error") ++errors;
      }
    } catch (const dblock::Error&) {
      ++errors;  // the server is away: try again shortly
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  std::printf(
      "acquired=%ld released=%ld errors=%ld fenced_rejected=%ld conflicts=%ld in_doubt=%ld\n",
      acquired, released, errors, rejected, conflicts, in_doubt);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "hold" && argc == 9) return hold_mode(argv);
    if (mode == "loop" && argc == 10) return loop_mode(argv);
    std::cerr << "usage: fault_worker hold|loop STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT "
                 "[SECONDS]\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "fault_worker: " << e.what() << '\n';
    return 1;
  }
}
