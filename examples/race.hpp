// SPDX-License-Identifier: Apache-2.0
// The examples' load generator: many requests at once from several processes, each with its own
// pool and threads, all starting at the same instant; the parent adds up what they report.
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
