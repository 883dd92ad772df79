// SPDX-License-Identifier: Apache-2.0
// The other processes of the fault suite. Every mode writes its history (history.hpp) to
// HISTORY as client CLIENT; STRATEGY names an entry of strategies.hpp; URL carries ?driver=.
//
//   fault_worker hold STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT
//     Acquires KEY (waiting up to 30 s), renews it every TTL/3, prints "token <n> wall <its
//     clock, s>" and waits; prints "lost_at <us> valid_until <us>" (monotonic) if the lease turns
//     lost meanwhile. On SIGUSR1 it makes a fenced write with its token, renews, releases,
//     prints "fenced=<rows> renew=<0|1> release=<outcome> lost=<0|1>" and exits.
//   fault_worker wait STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT
//     As hold, but waits for KEY in the lock's own acquire (a fair lock's waiter queues, others
//     sleep on release notifications or in the server) instead of trying every 20 ms.
//   fault_worker loop STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT SECONDS
//     For SECONDS: acquires KEY (waiting up to 1 s), makes a fenced write, releases; then takes
//     and releases a key of its own (KEY-CLIENT-<n>) once. Faults are counted and retried after
//     50 ms. Prints "acquired=<n> released=<n> errors=<n> fenced_rejected=<n> conflicts=<n>
//     in_doubt=<n>" at the end.
//   fault_worker elect URL PREFIX NAME TTL_MS HISTORY CLIENT SECONDS [RESOURCE_URL]
//     A candidate named CLIENT in the election NAME (dblock::Election, a pool of its own, TTL_MS)
//     for SECONDS or until SIGUSR1. Each term's work records "acquired" (token = the term) as it
//     begins, "renewed" each time it finds its stop token not requested (it still leads then),
//     and "released ... released" stamped when it found the stop token requested: so the
//     checker's holds (load_holds with leases_expire false) are the spans in which the work
//     believed it led, a killed leader's ending at its last "renewed". Every ~20 ms in between it
//     makes a fenced write with its term (token <= term: a term writes many times), through a
//     pool of its own to RESOURCE_URL (default URL: a leader cut off from the election's
//     database may still reach the resource). Database
//     errors are counted, never the end of it. Prints "term <n>" as each term begins, and at the
//     end "terms=<n> errors=<on_error calls> write_errors=<n> fenced_rejected=<n>
//     campaigning=<1: campaign() was still running>". Its sessions can be found on the server:
//     PostgreSQL ones by application_name PREFIX + CLIENT, MySQL/MariaDB ones by the ids it
//     records in PREFIX + "sessions" (client, session), which the test creates.
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
// AND token < <token> (the table is the test's; elect: token <= <term>). Exit status 0 unless a
// mode could not run.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "dblock/election.hpp"
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

// Rows changed by the fenced write (1: accepted, 0: a higher token wrote first). `below` is "<"
// for one write per token, "<=" for a term's many writes.
std::uint64_t fenced_write(dblock::ConnectionSource& source, const dblock::TableNames& tables,
                           const std::string& client, std::int64_t token,
                           const std::string& below = "<") {
  const bool pg = source.dialect() == dblock::Dialect::kPostgreSQL;
  auto conn = source.acquire();
  std::string table = tables.qualified(source.dialect(), "resource");
  return conn
      ->execute("UPDATE " + table + " SET token = " + (pg ? "$1" : "?") +
                    ", writer = " + (pg ? "$2" : "?") + " WHERE id = 1 AND token " + below + " " +
                    (pg ? "$3" : "?"),
                {dblock::Value(token), dblock::Value(client), dblock::Value(token)})
      .affected_rows();
}

std::uint64_t fenced_write(dblock::ConnectionSource& source, const Args& a, std::int64_t token) {
  return fenced_write(source, a.tables, a.client, token);
}

int hold_mode(char** argv, RecordedHolder::Waiting waiting) {
  Args a = parse(argv);
  auto pool = dblock::open_pool(a.url, {.max_size = 2});
  auto lock = a.strategy.make(*pool, a.tables);
  HistoryWriter history(a.history);
  RecordedHolder holder(*lock, history, a.client, a.key, a.ttl);
  if (!holder.acquire(seconds(30), waiting)) {
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

// A pool whose sessions the test can find on the server to kill them (see elect above).
std::unique_ptr<dblock::Pool> tagged_pool(const dblock::DatabaseUrl& url,
                                          const dblock::TableNames& tables,
                                          const std::string& client) {
  dblock::ConnectionFactory factory = [url, tables, client]() {
    auto conn = dblock::open_connection(url);
    if (url.dialect == dblock::Dialect::kPostgreSQL) {
      conn->execute("SELECT set_config('application_name', $1, false)",
                    {dblock::Value(tables.prefix() + client)});
    } else {
      conn->execute("INSERT INTO " + tables.qualified(url.dialect, "sessions") +
                        " (client, session) VALUES (?, CONNECTION_ID())",
                    {dblock::Value(client)});
    }
    return conn;
  };
  return std::make_unique<dblock::Pool>(url.dialect, std::move(factory),
                                        dblock::PoolOptions{.max_size = 4});
}

int elect_mode(char** argv) {
  signal(SIGUSR1, [](int) { g_usr1 = true; });
  const auto url = dblock::DatabaseUrl::resolve(std::string(argv[2]));
  const dblock::TableNames tables(argv[3]);
  const std::string name = argv[4], client = argv[7];
  const milliseconds ttl(std::stoll(argv[5]));
  const auto deadline = steady_clock::now() + seconds(std::stoll(argv[8]));
  auto pool = tagged_pool(url, tables, client);
  auto resource = tagged_pool(argv[9] ? dblock::DatabaseUrl::resolve(std::string(argv[9])) : url,
                              tables, client);
  HistoryWriter history(argv[6]);
  std::atomic<long> terms{0}, errors{0}, write_errors{0}, rejected{0};
  dblock::ElectionOptions options;
  options.candidate = client;
  options.tables = tables;
  options.ttl = ttl;
  options.rejoin_after = milliseconds(200);
  options.on_error = [&](const std::exception& e) {
    if (++errors <= 3) std::fprintf(stderr, "fault_worker: %s: %s\n", client.c_str(), e.what());
  };
  dblock::Election election(*pool, name, options);

  auto work = [&](const dblock::Term& term) {
    const std::int64_t number = term.number();
    ++terms;
    const auto began = dblock::testing::monotonic_us();
    history.acquired(client, name, number, began, began, ttl.count());
    std::printf("term %lld\n", static_cast<long long>(number));
    std::fflush(stdout);
    std::mutex mu;
    std::condition_variable_any wake;
    auto led = began;  // the last moment it checked that it still led
    for (;;) {
      const auto now = dblock::testing::monotonic_us();
      if (term.stop_token().stop_requested()) {
        // Its work ended after `led`: nothing was written between that check and this one (a
        // pause in between, SIGSTOP, shows as the time between them).
        history.released(client, name, number, led, "released");
        return;
      }
      led = now;
      history.renewed(client, name, number, now, ttl.count());  // it still led at `now`
      try {
        if (fenced_write(*resource, tables, client, number, "<=") == 0) ++rejected;
      } catch (const dblock::Error&) {
        ++write_errors;  // the server or the session is away: the next write tries again
      }
      std::unique_lock lock(mu);
      wake.wait_for(lock, term.stop_token(), milliseconds(20), [] { return false; });
    }
  };

  std::stop_source stop;
  std::atomic<bool> campaigning{true};
  std::thread candidate([&] {
    try {
      election.campaign(work, stop.get_token());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fault_worker: campaign() threw: %s\n", e.what());
    }
    campaigning = false;
  });
  while (!g_usr1 && steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
  const bool still_campaigning = campaigning;
  stop.request_stop();
  candidate.join();
  std::printf("terms=%ld errors=%ld write_errors=%ld fenced_rejected=%ld campaigning=%d\n",
              terms.load(), errors.load(), write_errors.load(), rejected.load(),
              still_campaigning ? 1 : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "hold" && argc == 9) return hold_mode(argv, RecordedHolder::Waiting::kTries);
    if (mode == "wait" && argc == 9) return hold_mode(argv, RecordedHolder::Waiting::kInLock);
    if (mode == "loop" && argc == 10) return loop_mode(argv);
    if (mode == "elect" && (argc == 9 || argc == 10)) return elect_mode(argv);
    std::cerr << "usage: fault_worker hold|wait|loop STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT "
                 "[SECONDS]\n"
                 "       fault_worker elect URL PREFIX NAME TTL_MS HISTORY CLIENT SECONDS "
                 "[RESOURCE_URL]\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "fault_worker: " << e.what() << '\n';
    return 1;
  }
}
