// The background renewer: one thread per process renews every auto-renew lease at a third of
// its TTL. A renewal that finds the lease gone marks it lost (and calls its on_lost). A renewal
// that fails with an error is retried at the next tick; once a whole TTL has passed since the
// last successful renewal (by this process's steady clock) the lease is marked lost too, since
// the database will have expired it. Internal.
//
// Released leases drop out at the next tick; the thread stops at process exit.
//
// Thread-safety: watch() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lease_core.hpp"

namespace dblock::detail {

class Renewer {
 public:
  static Renewer& instance();
  ~Renewer();

  // Starts renewing `lease` every ttl / 3.
  void watch(const std::shared_ptr<LeaseCore>& lease);
  // Leases currently watched (for tests and metrics).
  std::size_t watched() const;

 private:
  Renewer() = default;
  void run();

  struct Entry {
    std::weak_ptr<LeaseCore> lease;
    std::chrono::steady_clock::time_point due;
    std::chrono::steady_clock::time_point last_renewed;
  };

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dblock::detail
