// SPDX-License-Identifier: Apache-2.0
#include "load.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ctime>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

namespace dblock::bench {

void Latencies::merge(const Latencies& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sorted_ = false;
}

double Latencies::percentile(double p) {
  if (samples_.empty()) return 0;
  if (!sorted_) {
    std::sort(samples_.begin(), samples_.end());
    sorted_ = true;
  }
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples_.size())));
  return samples_[std::clamp<std::size_t>(rank, 1, samples_.size()) - 1];
}

double Latencies::mean() const {
  if (samples_.empty()) return 0;
  return std::accumulate(samples_.begin(), samples_.end(), 0.0) /
         static_cast<double>(samples_.size());
}

nlohmann::json Latencies::summary_ms() {
  return {{"p50_ms", percentile(50) / 1000},
          {"p99_ms", percentile(99) / 1000},
          {"mean_ms", mean() / 1000},
          {"samples", samples_.size()}};
}

namespace {

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

LoadResult run_load(int threads, std::chrono::milliseconds duration,
                    const std::function<Operation(int)>& make, std::chrono::milliseconds warmup) {
  using Clock = std::chrono::steady_clock;
  enum Phase { kSetup, kWarmup, kMeasure, kStop };
  std::atomic<int> phase{kSetup};
  std::atomic<int> ready{0};
  std::vector<Latencies> latencies(threads);
  std::vector<std::uint64_t> counts(threads, 0);
  std::mutex error_mu;
  std::exception_ptr error;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      try {
        Operation op = make(i);
        ready.fetch_add(1);
        while (phase.load() == kSetup) std::this_thread::yield();
        while (true) {
          int now = phase.load(std::memory_order_relaxed);
          if (now == kStop) break;
          auto t0 = Clock::now();
          bool counted = op();
          auto t1 = Clock::now();
          // Only operations that started and ended inside the window count.
          if (counted && now == kMeasure && phase.load(std::memory_order_relaxed) == kMeasure) {
            latencies[i].add(std::chrono::duration<double, std::micro>(t1 - t0).count());
            ++counts[i];
          }
        }
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
        ready.fetch_add(1);
        phase.store(kStop);
      }
    });
  }
  while (ready.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  LoadResult result;
  if (phase.load() != kStop) {
    phase.store(kWarmup);
    std::this_thread::sleep_for(warmup);
    phase.store(kMeasure);
    const double cpu_start = process_cpu_seconds();
    auto start = Clock::now();
    result.started = start;
    std::this_thread::sleep_for(duration);
    phase.store(kStop);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.cpu_seconds = process_cpu_seconds() - cpu_start;
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  for (int i = 0; i < threads; ++i) {
    result.ops += counts[i];
    result.latency.merge(latencies[i]);
  }
  result.ops_per_thread = std::move(counts);
  return result;
}

}  // namespace dblock::bench
