// SPDX-License-Identifier: Apache-2.0
#include "run_metrics.hpp"

#include <iostream>
#include <utility>

#include "dblock/error.hpp"
#include "prometheus.hpp"

namespace dblock::cli {

RunMetrics::RunMetrics(std::optional<std::string> path, std::string key)
    : path_(std::move(path)), key_(std::move(key)) {}

int RunMetrics::record(RunEnd end, int exit_code) {
  if (recorded_ || !path_) return exit_code;
  recorded_ = true;
  const std::string labels = "key=\"" + escape_label_value(key_) + "\"";
  const auto previous = read_metric_samples(*path_);
  const auto prev = [&](const std::string& name) {
    auto it = previous.find(name + "{" + labels + "}");
    return it == previous.end() ? 0.0 : it->second;
  };
  const auto count = [&](const char* name, bool now) { return prev(name) + (now ? 1 : 0); };
  const bool success = end == RunEnd::kRan && exit_code == 0;
  const double ran_for =
      started_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() - *started_).count()
               : 0.0;
  Metrics m;
  m["dblock_run_runs_total"] = {"Runs of the job, however they ended.",
                                "counter",
                                {{labels, count("dblock_run_runs_total", true)}}};
  m["dblock_run_busy_total"] = {"Runs that found the lock held elsewhere and did not run CMD.",
                                "counter",
                                {{labels, count("dblock_run_busy_total", end == RunEnd::kBusy)}}};
  m["dblock_run_lost_total"] = {"Runs whose lease was lost, CMD stopped or not started (exit 75).",
                                "counter",
                                {{labels, count("dblock_run_lost_total", end == RunEnd::kLost)}}};
  m["dblock_run_failures_total"] = {
      "Runs that did not end with exit status 0, busy runs left out.",
      "counter",
      {{labels, count("dblock_run_failures_total", !success && end != RunEnd::kBusy)}}};
  m["dblock_run_last_exit_code"] = {
      "The exit status of the last run (75: busy or lost).", "gauge", {{labels, exit_code}}};
  m["dblock_run_last_duration_seconds"] = {
      "How long CMD ran in the last run, in seconds (0 when it did not run).",
      "gauge",
      {{labels, ran_for}}};
  m["dblock_run_last_run_timestamp_seconds"] = {
      "When the last run ended, in seconds since the Unix epoch.",
      "gauge",
      {{labels, unix_seconds()}}};
  m["dblock_run_last_success_timestamp_seconds"] = {
      "When CMD last exited 0, in seconds since the Unix epoch (0: never).",
      "gauge",
      {{labels, success ? unix_seconds() : prev("dblock_run_last_success_timestamp_seconds")}}};
  try {
    write_metrics_file(*path_, m);
  } catch (const Error& e) {
    std::cerr << "dblock: " << e.what() << '\n';
  }
  return exit_code;
}

}  // namespace dblock::cli
