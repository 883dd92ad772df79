// SPDX-License-Identifier: Apache-2.0
#include "clean_command.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "common.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/error.hpp"
#include "duration.hpp"
#include "prometheus.hpp"

namespace dblock::cli {

namespace {

constexpr const char* kFooter =
    R"(A row goes only when its expires_at lies more than --grace in the past by the database clock,
and each DELETE re-checks that, so a lease renewed meanwhile survives. Claims are never deleted.
Several cleaners may run at once. Silent on success; -v prints one summary line, --json one JSON
object per run; a failure prints one line on stderr and exits non-zero (see the exit codes).

--grace (default 5m) keeps expired rows that long: fencing tokens of a deleted key restart from
the database clock, which is safe as long as the server clock never steps back by more than the
grace. Do not set it below the largest clock step you expect.

The history of holds (`dblock history`, when enabled) keeps each ended hold for
--history-retention (default 30d) after it ended, by the database clock; older rows are deleted
in the same batches.

--loop runs every --interval until SIGTERM or SIGINT, then exits 0; a failed run is reported on
stderr and the loop goes on. --prometheus FILE writes metrics (textfile collector format)
atomically after every run; counters continue from the previous FILE.)";

// Set by SIGTERM/SIGINT in --loop mode; read between batches and while waiting. The one piece of
// global state here: a signal handler can reach nothing else.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int) { g_stop.store(true); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

struct CleanCliOptions {
  DatabaseOptions db;
  std::uint64_t batch = 1000;
  std::string grace = "5m";
  std::string history_retention = "30d";
  std::uint64_t max_rows = 0;
  std::string max_time = "0";
  std::string pause = "0";
  std::string interval = "1m";
  bool dry_run = false;
  bool verbose = false;
  bool json = false;
  bool loop = false;
  std::optional<std::string> prometheus;
};

std::string summary_line(const CleanResult& r) {
  std::string line = std::string("dblock clean: ") + (r.dry_run ? "would delete " : "deleted ") +
                     std::to_string(r.deleted) + (r.deleted == 1 ? " row" : " rows");
  std::string per_table;
  for (const auto& [table, n] : r.tables) {
    per_table += (per_table.empty() ? "" : ", ") + table + " " + std::to_string(n);
  }
  if (!per_table.empty()) line += " (" + per_table + ")";
  if (!r.dry_run) {
    line += " in " + std::to_string(r.batches) + (r.batches == 1 ? " batch" : " batches");
  }
  line += ", " + std::to_string(r.duration.count()) + " ms";
  if (!r.complete) line += ", stopped by a budget";
  line += "; oldest expiry left: " + r.oldest_expiry_left.value_or("none");
  return line;
}

nlohmann::json to_json(const CleanResult& r) {
  nlohmann::json tables = nlohmann::json::object();
  for (const auto& [table, n] : r.tables) tables[table] = n;
  return {{"deleted", r.deleted},
          {"tables", std::move(tables)},
          {"batches", r.batches},
          {"duration_ms", r.duration.count()},
          {"oldest_expiry_left",
           r.oldest_expiry_left ? nlohmann::json(*r.oldest_expiry_left) : nlohmann::json()},
          {"complete", r.complete},
          {"dry_run", r.dry_run}};
}

// Writes the metrics after one run: `result` when it succeeded, nothing when it failed.
void write_metrics(const std::string& path, const std::optional<CleanResult>& result,
                   double run_seconds) {
  auto previous = read_metric_samples(path);
  auto prev = [&](const std::string& series) {
    auto it = previous.find(series);
    return it == previous.end() ? 0.0 : it->second;
  };
  Metrics m;
  auto& deleted = m["dblock_clean_deleted_total"];
  deleted = {"Expired lock rows the cleaner deleted, by table.", "counter", {}};
  deleted.series["table=\"locks\""] = prev("dblock_clean_deleted_total{table=\"locks\"}");
  if (result && !result->dry_run) {
    for (const auto& [table, n] : result->tables) {
      std::string labels = "table=\"" + table + "\"";
      deleted.series[labels] =
          prev("dblock_clean_deleted_total{" + labels + "}") + static_cast<double>(n);
    }
  }
  m["dblock_clean_runs_total"] = {
      "Cleaner runs, successful or not.", "counter", {{"", prev("dblock_clean_runs_total") + 1}}};
  m["dblock_clean_failures_total"] = {
      "Cleaner runs that failed.",
      "counter",
      {{"", prev("dblock_clean_failures_total") + (result ? 0 : 1)}}};
  m["dblock_clean_last_run_success"] = {
      "1 when the last run succeeded, 0 when it failed.", "gauge", {{"", result ? 1.0 : 0.0}}};
  m["dblock_clean_last_run_seconds"] = {
      "How long the last run took, in seconds.", "gauge", {{"", run_seconds}}};
  m["dblock_clean_last_success_timestamp_seconds"] = {
      "When the last successful run ended, in seconds since the Unix epoch.",
      "gauge",
      {{"", result ? unix_seconds() : prev("dblock_clean_last_success_timestamp_seconds")}}};
  if (result) {
    m["dblock_clean_last_run_deleted"] = {
        "Rows the last successful run deleted (or, in a dry run, would delete).",
        "gauge",
        {{"", static_cast<double>(result->deleted)}}};
    m["dblock_clean_last_run_batches"] = {"DELETE statements the last successful run sent.",
                                          "gauge",
                                          {{"", static_cast<double>(result->batches)}}};
    m["dblock_clean_last_run_complete"] = {
        "1 when the last run removed every row past the grace, 0 when a budget stopped it.",
        "gauge",
        {{"", result->complete ? 1.0 : 0.0}}};
  }
  write_metrics_file(path, m);
}

// A progress bar on stderr, only for a terminal and a backlog of many batches.
class ProgressBar {
 public:
  ProgressBar(std::uint64_t total) : total_(total) {}
  ~ProgressBar() {
    if (drawn_) std::fputs("\r\033[K", stderr);
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(std::uint64_t done) {
    constexpr int kWidth = 30;
    const std::uint64_t shown = std::min(done, total_);
    const int filled = static_cast<int>(shown * kWidth / total_);
    std::fprintf(stderr, "\rdblock clean: [%s%s] %3d%% %llu/%llu", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, ' ').c_str(), static_cast<int>(shown * 100 / total_),
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_));
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  std::uint64_t total_;
  bool drawn_ = false;
};

CleanResult clean_once(const CleanCliOptions& opts, const CleanOptions& options) {
  auto conn = opts.db.connect();
  const TableNames tables = opts.db.table_names();
  // Worth a bar only on a terminal and for at least this many batches.
  constexpr std::uint64_t kProgressBatches = 20;
  std::unique_ptr<ProgressBar> bar;
  CleanOptions run = options;
  if (!options.dry_run && ::isatty(STDERR_FILENO) == 1) {
    CleanOptions count = options;
    count.dry_run = true;
    const std::uint64_t backlog = clean(*conn, tables, count).deleted;
    if (backlog >= kProgressBatches * options.batch_size) {
      bar = std::make_unique<ProgressBar>(backlog);
      run.on_batch = [&bar](const CleanProgress& p) { bar->update(p.deleted); };
    }
  }
  CleanResult result = clean(*conn, tables, run);
  bar.reset();
  return result;
}

// One run: clean, report, write metrics. Returns the exit code (errors reported by run_guarded).
int run_once(const CleanCliOptions& opts, const CleanOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  return run_guarded([&] {
    std::optional<CleanResult> result;
    try {
      result = clean_once(opts, options);
    } catch (...) {
      if (opts.prometheus) {
        try {
          write_metrics(*opts.prometheus, std::nullopt, elapsed());
        } catch (const Error& e) {
          std::cerr << "dblock: " << e.what() << '\n';
        }
      }
      throw;
    }
    if (opts.json) {
      std::printf("%s\n", to_json(*result).dump().c_str());
    } else if (opts.verbose) {
      std::printf("%s\n", summary_line(*result).c_str());
    }
    std::fflush(stdout);
    if (opts.prometheus) write_metrics(*opts.prometheus, result, elapsed());
    return kExitOk;
  });
}

// Sleeps up to `d`; returns false as soon as a stop signal arrives.
bool wait_for_next_run(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    if (g_stop.load()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
  }
  return !g_stop.load();
}

int clean_command(const CleanCliOptions& opts) {
  CleanOptions options;
  int code = run_guarded([&] {
    if (opts.batch == 0) throw Error(ErrorCode::kInvalidArgument, "--batch must be at least 1");
    options.batch_size = opts.batch;
    options.grace = parse_duration_option(opts.grace, "--grace");
    options.history_retention =
        parse_duration_option(opts.history_retention, "--history-retention");
    options.max_rows = opts.max_rows;
    options.max_time = parse_duration_option(opts.max_time, "--max-time");
    options.pause = parse_duration_option(opts.pause, "--pause");
    options.dry_run = opts.dry_run;
    return kExitOk;
  });
  if (code != kExitOk) return code;
  if (!opts.loop) return run_once(opts, options);

  std::chrono::milliseconds interval{0};
  code = run_guarded([&] {
    interval = parse_duration_option(opts.interval, "--interval");
    if (interval.count() <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "--interval must be longer than 0");
    }
    return kExitOk;
  });
  if (code != kExitOk) return code;
  install_stop_handlers();
  options.stop = &g_stop;
  do {
    run_once(opts, options);  // a failed run is reported and the loop goes on
  } while (wait_for_next_run(interval));
  return kExitOk;
}

}  // namespace

void add_clean_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CleanCliOptions>();
  CLI::App* sub = app.add_subcommand("clean", "Delete expired lock rows in bounded batches");
  sub->footer(kFooter);
  opts->db.add_to(*sub);
  sub->add_option("--batch", opts->batch, "Rows per DELETE statement")
      ->check(whole_number())
      ->capture_default_str();
  sub->add_option("--grace", opts->grace,
                  "Keep rows this long past expiry (500ms, 30s, 5m, 1h; see below)")
      ->capture_default_str();
  sub->add_option("--history-retention", opts->history_retention,
                  "Keep the history of holds this long after each ended (see `dblock history`)")
      ->capture_default_str();
  sub->add_option("--max-rows", opts->max_rows, "Delete at most this many rows per run (0: all)")
      ->check(whole_number())
      ->capture_default_str();
  sub->add_option("--max-time", opts->max_time, "Start no new batch after this long (0: no limit)")
      ->capture_default_str();
  sub->add_option("--pause", opts->pause, "Sleep between batches (0: none)")->capture_default_str();
  sub->add_flag("--dry-run", opts->dry_run, "Count the rows that would go; delete nothing");
  sub->add_flag("-v,--verbose", opts->verbose, "Print a one-line summary of each run");
  sub->add_flag("--json", opts->json,
                "Print each run as one JSON object: deleted, tables (per-table counts), "
                "batches, duration_ms, oldest_expiry_left (UTC ISO 8601 or null), complete, "
                "dry_run");
  auto* loop = sub->add_flag("--loop", opts->loop,
                             "Run every --interval until SIGTERM or SIGINT, then exit 0");
  sub->add_option("--interval", opts->interval, "Time between runs with --loop")
      ->capture_default_str()
      ->needs(loop);
  sub->add_option("--prometheus", opts->prometheus,
                  "Write metrics to this file after each run (for node_exporter's textfile "
                  "collector; written atomically)");
  sub->callback([opts, exit_code] { *exit_code = clean_command(*opts); });
}

}  // namespace dblock::cli
