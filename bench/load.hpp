// SPDX-License-Identifier: Apache-2.0
// Running a load: N threads repeat one operation for a while; each operation's latency and the
// number completed inside the measured window are recorded. A short warm-up (connections opened,
// statements prepared) runs first and is not counted.
//
// Thread-safety: run_load() owns its threads; a Latencies is filled by one thread and merged
// after they are joined.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

namespace dblock::bench {

// Latency samples in microseconds.
class Latencies {
 public:
  void add(double us) { samples_.push_back(us); }
  void merge(const Latencies& other);
  std::size_t size() const noexcept { return samples_.size(); }
  // The p-th percentile (0..100), nearest rank; 0 when empty. Sorts the samples.
  double percentile(double p);
  double mean() const;
  // {"p50_ms", "p99_ms", "mean_ms", "samples"}
  nlohmann::json summary_ms();

 private:
  std::vector<double> samples_;
  bool sorted_ = false;
};

struct LoadResult {
  std::uint64_t ops = 0;
  double seconds = 0;
  Latencies latency;
  std::vector<std::uint64_t> ops_per_thread;
  std::chrono::steady_clock::time_point started;  // the measured window's start
  // CPU time this process (all its threads) used in the measured window: the client's side of
  // the work, the database servers being other processes.
  double cpu_seconds = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  double cpu_us_per_op() const {
    return ops > 0 ? cpu_seconds * 1e6 / static_cast<double>(ops) : 0;
  }
};

// One thread's operation: called over and over; returns false when the operation did not count
// (e.g. a try that did not acquire), which is then neither counted nor timed.
using Operation = std::function<bool()>;

// Starts `threads` threads; each calls make(i) once (on its own thread: per-thread connections
// and owners belong there), waits for the others, then repeats the operation through the warm-up
// and the measured `duration`.
LoadResult run_load(int threads, std::chrono::milliseconds duration,
                    const std::function<Operation(int)>& make,
                    std::chrono::milliseconds warmup = std::chrono::milliseconds(200));

double ms_since(std::chrono::steady_clock::time_point start);

}  // namespace dblock::bench
