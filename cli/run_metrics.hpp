// SPDX-License-Identifier: Apache-2.0
// `dblock run --prometheus FILE`: how the runs of a job end, as metrics for node_exporter's
// textfile collector (the format and file handling of prometheus.hpp). Counters carry over from
// the file the previous run wrote, so one file per job (per key) keeps counting across cron runs.
//
//   RunMetrics metrics(path, key);
//   return metrics.record(RunEnd::kBusy, 75);  // writes the file, returns the exit code
//
// Thread-safety: one RunMetrics per run, used from its main thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace dblock::cli {

// How a run ended.
enum class RunEnd {
  kRan,     // CMD ran and exited (with the exit code recorded)
  kBusy,    // the lock was held elsewhere: CMD was not run
  kLost,    // the lease was lost (while CMD ran, or before it started)
  kNotRun,  // CMD could not be started (126, 127), or a signal came first
  kFailed,  // dblock failed (database unreachable, access denied, tables missing, bad option)
};

class RunMetrics {
 public:
  // No file (`path` empty): record() only returns the exit code.
  RunMetrics(std::optional<std::string> path, std::string key);

  // CMD started now (its run time is counted from here).
  void started() { started_ = std::chrono::steady_clock::now(); }
  // Writes the metrics of this run ending as `end` with `exit_code`, once (later calls write
  // nothing), and returns `exit_code`. A file that cannot be written is reported on stderr; the
  // exit code stays the run's.
  int record(RunEnd end, int exit_code);
  bool recorded() const { return recorded_; }

 private:
  std::optional<std::string> path_;
  std::string key_;
  std::optional<std::chrono::steady_clock::time_point> started_;
  bool recorded_ = false;
};

}  // namespace dblock::cli
