// SPDX-License-Identifier: Apache-2.0
// Job runner: many workers, at most three report jobs running at once, whoever runs them.
//
// The parent creates a table of job runs, then forks worker processes, each with its own pool
// and threads; every request is one job. A job takes one of the three permits of the key
// "<demo>:reports" with a dblock::Semaphore (waiting up to 30 s), stamps its start with the
// database clock, works for a few milliseconds, stamps its end, and gives the permit back. The
// parent then replays the stamps and checks that no moment had more than three jobs running,
// that three did run at once (the limit was used, not just one job at a time), and that every
// job ran exactly once.
//
//   job_runner [--url URL] [--processes N] [--threads T] [--requests JOBS]
//
// The URL defaults to DBLOCK_URL.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/url.hpp"
#include "race.hpp"

namespace {

using namespace std::chrono_literals;

constexpr const char* kUsage =
    "usage: job_runner [--url URL] [--processes N] [--threads T] [--requests JOBS]\n";

constexpr int kPermits = 3;

// The demo's own table, unique to this run, and its semaphore key.
struct Demo {
  std::string runs = "demo_job_runs_" + std::to_string(getpid());
  std::string key = runs + ":reports";
};

// What happened to a job.
enum Outcome { kRan, kTimedOut, kError };

// The database clock in microseconds.
std::string now_us(dblock::Dialect d) {
  return d == dblock::Dialect::kPostgreSQL
             ? "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
             : "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";
}

void create_table(dblock::Connection& conn, const Demo& demo) {
  conn.execute("CREATE TABLE " + demo.runs +
               " (job BIGINT PRIMARY KEY, token BIGINT NOT NULL, started_us BIGINT NOT NULL,"
               " finished_us BIGINT)");
}

void drop_table(const dblock::DatabaseUrl& url, const Demo& demo) {
  dblock::open_connection(url)->execute("DROP TABLE IF EXISTS " + demo.runs);
}

// One job, run while its permit is held: the stamps lie inside the permit's hold.
Outcome run_job(dblock::ConnectionSource& pool, const Demo& demo, const dblock::Lease& permit,
                long job) {
  auto conn = pool.acquire();
  const dblock::Dialect d = conn->dialect();
  conn->execute(examples::placeholders(
                    d, "INSERT INTO " + demo.runs + " VALUES (?, ?, " + now_us(d) + ", NULL)"),
                {static_cast<std::int64_t>(job), permit.fencing_token()});
  std::this_thread::sleep_for(std::chrono::milliseconds(5 + job % 11));  // the work
  conn->execute(examples::placeholders(d, "UPDATE " + demo.runs +
                                              " SET finished_us = " + now_us(d) + " WHERE job = ?"),
                {static_cast<std::int64_t>(job)});
  return kRan;
}

// What each worker process runs: one Semaphore shared by its threads, one job per request.
examples::Request jobs(dblock::ConnectionSource& pool, const Demo& demo) {
  auto reports = std::make_shared<dblock::Semaphore>(pool, kPermits);
  return [reports, &pool, &demo](long job) {
    dblock::LockOptions options;
    options.ttl = 10s;  // renewed in the background while the job runs
    try {
      auto outcome = dblock::with_lock(
          *reports, demo.key, 30s, options,
          [&](dblock::Lease& permit) { return run_job(pool, demo, permit, job); });
      return static_cast<int>(outcome ? *outcome : kTimedOut);
    } catch (const dblock::Error& e) {
      std::fprintf(stderr, "job_runner: job %ld: %s\n", job, e.what());
      return static_cast<int>(kError);
    }
  };
}

// The most jobs running at one moment, from their stamps.
long peak_running(dblock::Connection& conn, const Demo& demo) {
  auto r = conn.execute("SELECT started_us, finished_us FROM " + demo.runs);
  std::vector<std::pair<std::int64_t, int>> events;  // (time, +1 start / -1 end)
  for (std::size_t i = 0; i < r.size(); ++i) {
    events.emplace_back(r.int64_at(i, "started_us"), +1);
    events.emplace_back(r.int64_at(i, "finished_us"), -1);
  }
  std::sort(events.begin(), events.end());  // an end sorts before a start at the same time
  long running = 0, peak = 0;
  for (const auto& [at, change] : events) peak = std::max(peak, running += change);
  return peak;
}

// Prints the summary and checks it against the database. Returns true when everything agrees.
bool report(const dblock::DatabaseUrl& url, const Demo& demo, const examples::RaceConfig& cfg,
            const examples::RaceResult& run) {
  const long* n = run.sum.count;
  auto conn = dblock::open_connection(url);
  const long rows = conn->execute("SELECT COUNT(*) AS n FROM " + demo.runs).int64_at(0, 0);
  const long unfinished =
      conn->execute("SELECT COUNT(*) AS n FROM " + demo.runs + " WHERE finished_us IS NULL")
          .int64_at(0, 0);
  const long peak = unfinished == 0 ? peak_running(*conn, demo) : -1;
  std::printf(
      "%ld jobs from %d processes x %d threads, at most %d at once: %ld ran, %ld timed out, "
      "%ld failed; at most %ld ran at one moment (by the database clock); %.3f s\n",
      cfg.requests, cfg.processes, cfg.threads, kPermits, n[kRan], n[kTimedOut], n[kError], peak,
      run.seconds);

  std::vector<std::string> problems;
  if (!run.workers_ok) problems.push_back("a worker process failed");
  if (n[kRan] != cfg.requests || rows != cfg.requests) problems.push_back("jobs did not all run");
  if (unfinished != 0) problems.push_back("jobs did not finish");
  if (peak > kPermits) problems.push_back("more jobs ran at once than the semaphore allows");
  if (peak >= 0 && peak < kPermits && cfg.processes * cfg.threads > kPermits) {
    problems.push_back("the permits were never all in use (jobs ran one after another)");
  }
  return examples::verdict(problems, "every job ran once, never more than 3 at a time");
}

}  // namespace

int main(int argc, char** argv) {
  const examples::RaceProgram program{"job_runner", kUsage, {4, 6, 200}, kRan};
  const Demo demo;
  return examples::race_main(argc, argv, program, demo, create_table, jobs, report, drop_table);
}
