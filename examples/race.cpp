// SPDX-License-Identifier: Apache-2.0
#include "race.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace examples {

namespace {

using namespace std::chrono_literals;

// A worker process: its own pool and cfg.threads threads, which start at `start` and share the
// requests worker, worker + processes, ... Sends its tally to the parent on `results_fd`.
// Returns the process's exit status.
int run_worker(const dblock::DatabaseUrl& url, const RaceConfig& cfg, const WorkerSetup& setup,
               int winning_outcome, int worker, std::chrono::steady_clock::time_point start,
               int results_fd) {
  std::atomic<long> next = worker;  // the next request to make
  std::atomic<long> count[kMaxOutcomes] = {};
  std::atomic<long> winner = -1;
  try {
    auto pool = dblock::open_pool(url, {.max_size = static_cast<std::size_t>(cfg.threads) + 1});
    {  // open every connection before the start, so the race is not about who connects first
      std::vector<dblock::PooledConnection> warm;
      for (int i = 0; i <= cfg.threads; ++i) warm.push_back(pool->acquire());
    }
    Request request = setup(*pool);
    std::vector<std::jthread> threads;
    for (int t = 0; t < cfg.threads; ++t) {
      threads.emplace_back([&] {
        std::this_thread::sleep_until(start);
        for (long i; (i = next.fetch_add(cfg.processes)) < cfg.requests;) {
          const int outcome = request(i);
          ++count[outcome];
          if (outcome == winning_outcome) winner = i;
        }
      });
    }
  } catch (const std::exception& e) {  // never let a worker unwind into main()
    std::fprintf(stderr, "worker %d: %s\n", worker, e.what());
    return 1;
  }
  Tally tally;
  for (int o = 0; o < kMaxOutcomes; ++o) tally.count[o] = count[o];
  tally.winner = winner;
  // A write() this small to a pipe is atomic: reports from several workers never interleave.
  return write(results_fd, &tally, sizeof tally) == sizeof tally ? 0 : 1;
}

}  // namespace

RaceResult race(const dblock::DatabaseUrl& url, const RaceConfig& cfg, const WorkerSetup& setup,
                int winning_outcome) {
  std::fflush(nullptr);  // or the children print the parent's buffered output again
  int results[2];
  if (pipe(results) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  // steady_clock is CLOCK_MONOTONIC, the same in every process: all threads start at `start`.
  // A second is ample to fork and connect; a worker that is late joins the race late.
  const auto start = std::chrono::steady_clock::now() + 1s;
  std::vector<pid_t> pids;
  for (int w = 0; w < cfg.processes; ++w) {
    const pid_t pid = fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) {
      close(results[0]);
      const int status = run_worker(url, cfg, setup, winning_outcome, w, start, results[1]);
      std::fflush(nullptr);
      _exit(status);  // leave without running the parent's destructors and atexit handlers
    }
    pids.push_back(pid);
  }
  close(results[1]);  // so that reading ends once every worker has closed its end

  RaceResult run;
  Tally t;
  int reports = 0;
  while (read(results[0], &t, sizeof t) == sizeof t) {
    for (int o = 0; o < kMaxOutcomes; ++o) run.sum.count[o] += t.count[o];
    if (t.winner >= 0) run.sum.winner = t.winner;
    ++reports;
  }
  close(results[0]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.workers_ok = reports == cfg.processes;
  for (pid_t pid : pids) {
    int status = 0;
    run.workers_ok &=
        waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return run;
}

std::string placeholders(dblock::Dialect dialect, const std::string& text) {
  if (dialect == dblock::Dialect::kMySQL) return text;
  std::string out;
  int n = 0;
  for (char c : text) {
    if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

bool parse_flags(int argc, char** argv, const std::vector<std::string>& known,
                 std::map<std::string, std::string>& out) {
  if (argc % 2 != 1) return false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (!flag.starts_with("--")) return false;
    const std::string name = flag.substr(2);
    if (std::find(known.begin(), known.end(), name) == known.end()) return false;
    out[name] = argv[i + 1];
  }
  return true;
}

bool parse_race_args(int argc, char** argv, std::optional<std::string>& url, RaceConfig& race) {
  std::map<std::string, std::string> flags;
  if (!parse_flags(argc, argv, {"url", "processes", "threads", "requests"}, flags)) return false;
  if (flags.count("url")) url = flags["url"];
  if (flags.count("processes")) race.processes = std::atoi(flags["processes"].c_str());
  if (flags.count("threads")) race.threads = std::atoi(flags["threads"].c_str());
  if (flags.count("requests")) race.requests = std::atol(flags["requests"].c_str());
  return race.processes > 0 && race.threads > 0 && race.requests > 0;
}

bool verdict(const std::vector<std::string>& problems, const char* ok) {
  for (const auto& p : problems) std::printf("FAILED: %s\n", p.c_str());
  if (problems.empty()) std::printf("OK: %s\n", ok);
  return problems.empty();
}

int race_main(int argc, char** argv, const RaceProgram& program, const RaceSteps& steps) {
  std::optional<std::string> url_flag;
  RaceConfig cfg = program.race;
  if (!parse_race_args(argc, argv, url_flag, cfg)) {
    std::fprintf(stderr, "%s", program.usage);
    return 2;
  }
  try {
    const auto url = dblock::DatabaseUrl::resolve(url_flag);
    {  // set up, then close: a connection must never be shared across fork()
      auto conn = dblock::open_connection(url);
      std::printf("database: %s\n", conn->describe().c_str());
      dblock::Migrator(*conn).up();
      steps.create(*conn);
    }
    const bool ok = with_cleanup(
        [&] {
          return steps.report(url, cfg, race(url, cfg, steps.requests, program.winning_outcome));
        },
        [&] { steps.drop(url); });
    return ok ? 0 : 1;
  } catch (const std::exception& e) {  // dblock::Error, or a failed pipe() / fork()
    std::fprintf(stderr, "%s: %s\n", program.name, e.what());
    return 1;
  }
}

}  // namespace examples
