// SPDX-License-Identifier: Apache-2.0
// The examples' load generator: many requests at once from several processes, each with its own
// pool and threads, all starting at the same instant; the parent adds up what they report.
// race_main() is the main() such an example shares: flags, tables, race, report, cleanup.
//
// Thread-safety: race() is called from one thread, before any other thread exists (it forks).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/url.hpp"

namespace examples {

struct RaceConfig {
  int processes = 4;
  int threads = 8;
  long requests = 1000;
};

// Requests per outcome (an example's own enum, at most kMaxOutcomes values) and the last request
// that ended in the "winning" outcome, or -1.
constexpr int kMaxOutcomes = 8;
struct Tally {
  long count[kMaxOutcomes] = {};
  long winner = -1;
};

struct RaceResult {
  Tally sum;                // over all workers
  bool workers_ok = false;  // every worker reported and exited 0
  double seconds = 0;       // from the start to the last report
};

// Runs one request (number 0 .. requests-1) in a worker thread; returns its outcome. Must not
// throw: catch and map errors to an outcome of your own.
using Request = std::function<int(long request)>;
// Runs once per worker process with that process's pool (threads + 1 connections, all opened
// before the start) and returns the request function its threads share.
using WorkerSetup = std::function<Request(dblock::ConnectionSource& pool)>;

// Forks cfg.processes workers; their threads start together one second from now and share the
// requests round-robin. A request ending in `winning_outcome` is remembered as Tally::winner.
RaceResult race(const dblock::DatabaseUrl& url, const RaceConfig& cfg, const WorkerSetup& setup,
                int winning_outcome);

// `text` written with ? placeholders, numbered ($1, $2, ...) for PostgreSQL.
std::string placeholders(dblock::Dialect dialect, const std::string& text);

// Reads --flag value pairs into `out` (flag name without the dashes -> value). False for an odd
// count or a flag not in `known`.
bool parse_flags(int argc, char** argv, const std::vector<std::string>& known,
                 std::map<std::string, std::string>& out);

// Reads --url, --processes, --threads and --requests. False for anything else, or a count
// that is not positive.
bool parse_race_args(int argc, char** argv, std::optional<std::string>& url, RaceConfig& race);

// Prints "FAILED: <problem>" for each of `problems`, or "OK: <ok>" when there is none. Returns
// whether there was none.
bool verdict(const std::vector<std::string>& problems, const char* ok);

// What main() says of a racing example: its name (before its errors), its usage line, the race
// it runs when no flag changes it, and the outcome remembered as the winner.
struct RaceProgram {
  const char* name;
  const char* usage;
  RaceConfig race;
  int winning_outcome;
};

// A racing example's steps: create its tables (on a connection closed before the race), build
// a worker's request function, check and print what the race did (true: every check holds),
// drop its tables.
struct RaceSteps {
  std::function<void(dblock::Connection& conn)> create;
  WorkerSetup requests;
  std::function<bool(const dblock::DatabaseUrl& url, const RaceConfig& cfg, const RaceResult& run)>
      report;
  std::function<void(const dblock::DatabaseUrl& url)> drop;
};

// The main() of a racing example: reads the flags parse_race_args() knows (else prints the
// usage and returns 2), applies dblock's migrations and creates the tables, races, reports, and
// drops the tables on every path. Returns 0 when the report found nothing wrong, else 1; an
// error is printed after the program's name and returns 1.
int race_main(int argc, char** argv, const RaceProgram& program, const RaceSteps& steps);

// The same with the example's own functions, each taking its Demo (the run's table names):
// create(conn, demo), requests(pool, demo), report(url, demo, cfg, run), drop(url, demo).
template <class Demo, class Create, class Requests, class Report, class Drop>
int race_main(int argc, char** argv, const RaceProgram& program, const Demo& demo, Create create,
              Requests requests, Report report, Drop drop) {
  return race_main(
      argc, argv, program,
      RaceSteps{[&](dblock::Connection& conn) { create(conn, demo); },
                [&](dblock::ConnectionSource& pool) -> Request { return requests(pool, demo); },
                [&](const dblock::DatabaseUrl& url, const RaceConfig& cfg, const RaceResult& run) {
                  return report(url, demo, cfg, run);
                },
                [&](const dblock::DatabaseUrl& url) { drop(url, demo); }});
}

// Returns body(), running cleanup() after it on every path. When body throws, a failing cleanup
// is ignored so that the first error is the one reported.
template <class Body, class Cleanup>
auto with_cleanup(Body&& body, Cleanup&& cleanup) {
  decltype(body()) result;
  try {
    result = body();
  } catch (...) {
    try {
      cleanup();
    } catch (...) {
    }
    throw;
  }
  cleanup();
  return result;
}

}  // namespace examples
