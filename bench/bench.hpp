// SPDX-License-Identifier: Apache-2.0
// The benchmark's shared vocabulary: run settings, the database a run measures, the context a
// scenario gets, and the scenario registry. Each scenario lives in its own file under
// scenarios/ and registers itself with DBLOCK_BENCH_SCENARIO, so adding one touches no other file.
//
// Figures go into one JSON document (context.out()), from which the human table and the chart
// are made. Comparisons put their ratio in a field whose name starts with "ratio".
//
// Thread-safety: a BenchContext is used by the scenario's controlling thread only; the load
// helpers in load.hpp run the worker threads.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/table_names.hpp"
#include "dblock/url.hpp"

namespace dblock::bench {

struct Settings {
  bool quick = false;
  // Measured time per point. A comparison (compare.hpp) runs `rounds` pairs of rounds, each
  // side measured for `round_duration` per round.
  std::chrono::milliseconds duration{1000};
  int rounds = 16;
  std::chrono::milliseconds round_duration{150};
  std::vector<int> connections{1, 2, 4, 8, 16};  // uncontended sweep (1 and 8 always included)
  std::vector<int> hot_clients{8, 16, 32, 64};
  std::vector<std::int64_t> table_rows{1'000, 1'000'000, 10'000'000};
  std::int64_t cleaner_rows = 200'000;
};

// A database to measure.
struct Target {
  std::string name;  // "postgresql", "mysql"
  DatabaseUrl url;
  Dialect dialect() const { return url.dialect; }
};

// A headline figure: one line of the summary table, ratios first.
struct Headline {
  std::string label;  // "dblock/raw, 8 connections"
  double value = 0;
  std::string unit{};      // "x", "ms", "rows/s"
  std::string target{};    // ">= 0.95", or empty when the issue sets none
  int met = -1;            // 1 met, 0 not met, -1 no target
  bool ratio = false;      // listed first
  std::string database{};  // Target::name (set by BenchContext::headline)
};

// The headlines of one kind (the ratios, or the other figures) as the human table and the
// Markdown report lay them out: the labels in run order, and each label's headline by database.
struct HeadlineRows {
  std::vector<std::string> labels;
  std::map<std::string, std::map<std::string, const Headline*>> cells;
};
HeadlineRows headline_rows(const std::vector<Headline>& headlines, bool ratios);

// Lock tables under a fresh random prefix, migrated; dropped when this goes away.
class ScopedTables {
 public:
  explicit ScopedTables(const DatabaseUrl& url);
  ~ScopedTables();
  ScopedTables(const ScopedTables&) = delete;
  ScopedTables& operator=(const ScopedTables&) = delete;
  const TableNames& names() const noexcept { return names_; }
  // The admin connection the tables were made with (one thread at a time).
  Connection& connection() { return *conn_; }

 private:
  std::unique_ptr<Connection> conn_;
  TableNames names_;
};

class BenchContext {
 public:
  BenchContext(const Settings& settings, const Target& target, nlohmann::json& out,
               std::vector<Headline>& headlines)
      : settings_(settings), target_(target), out_(out), headlines_(headlines) {}

  const Settings& settings() const noexcept { return settings_; }
  const Target& target() const noexcept { return target_; }
  Dialect dialect() const { return target_.dialect(); }
  bool postgresql() const { return dialect() == Dialect::kPostgreSQL; }
  // This database's section of the JSON document.
  nlohmann::json& out() { return out_; }
  // A scenario's figures in it: `name` = {"what": what it measures, "points": one per setting}.
  void section(const std::string& name, std::string what, nlohmann::json points) {
    out_[name] = {{"what", std::move(what)}, {"points", std::move(points)}};
  }

  // dblock's built-in pool for the target, sized for `connections`.
  std::unique_ptr<Pool> pool(int connections) const;

  void headline(Headline h) {
    h.database = target_.name;
    headlines_.push_back(std::move(h));
  }
  // A progress line on stderr, so stdout holds only the results.
  void progress(const std::string& text) const;

 private:
  const Settings& settings_;
  const Target& target_;
  nlohmann::json& out_;
  std::vector<Headline>& headlines_;
};

struct Scenario {
  std::string name;  // JSON key and --only filter
  int order = 0;     // scenarios run in this order
  std::function<void(BenchContext&)> run;
};

bool register_scenario(Scenario scenario);
// A scenario that files its own sections.
bool register_scenario(std::string name, int order, std::function<void(BenchContext&)> run);
// A scenario whose figures are one section under its own name: `run` returns the points, filed
// with `what` (what it measures).
bool register_scenario(std::string name, int order,
                       std::function<nlohmann::json(BenchContext&)> run, std::string what);
std::vector<Scenario> scenarios();  // sorted by order

}  // namespace dblock::bench

#define DBLOCK_BENCH_CONCAT_(a, b) a##b
#define DBLOCK_BENCH_CONCAT(a, b) DBLOCK_BENCH_CONCAT_(a, b)
// At namespace scope in a scenario file: DBLOCK_BENCH_SCENARIO("hot_key", 30, run_hot_key), or
// DBLOCK_BENCH_SCENARIO("hot_key", 30, run_hot_key, "what it measures") for a run that returns
// its one section's points.
#define DBLOCK_BENCH_SCENARIO(name, order, ...)                                                \
  [[maybe_unused]] static const bool DBLOCK_BENCH_CONCAT(dblock_bench_registered_, __LINE__) = \
      ::dblock::bench::register_scenario(name, order, __VA_ARGS__)
