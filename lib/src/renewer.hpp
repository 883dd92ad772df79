// The background renewer: one thread per process renews every auto-renew lease at a third of
// its TTL. A renewal that finds the lease gone marks it lost (and calls its on_lost). A renewal
// that fails with an error is retried at the next tick; once a whole TTL has passed since the
// last successful renewal was sent (by this process's steady clock) the lease is marked lost
// too, since the database will have expired it. Renewals run one after another on the one
// thread: a renewal stuck on a dead connection delays the others until the driver gives up.
// So that such a stuck renewal cannot hold back the verdict, a second thread (the watchdog)
// marks a lease lost, and calls its on_lost, as soon as a whole TTL has passed since its last
// successful renewal was sent, whatever the renewal thread is doing. Internal.
//
// Released leases drop out at the next tick; the thread stops at process exit.
//
// Thread-safety: watch() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "lease_core.hpp"

namespace dblock::detail {

class Renewer {
 public:
  static Renewer& instance();
  ~Renewer();

  // Starts renewing `lease` every ttl / 3. `sent` is when the acquiring statement was sent: the
  // lease is valid for a TTL from then at most.
  void watch(const std::shared_ptr<LeaseCore>& lease, std::chrono::steady_clock::time_point sent);
  // Wakes the thread to recompute when leases are due (after a lease's TTL changed).
  void reschedule();
  // Leases currently watched (for tests and metrics).
  std::size_t watched() const;

 private:
  Renewer() = default;
  void run();
  void watch_deadlines();

  struct Entry {
    std::weak_ptr<LeaseCore> lease;
    // Set while renewals fail: when to try again. Otherwise a lease is due a third of its TTL
    // after its latest renewal (LeaseCore::renewed_at()).
    std::optional<std::chrono::steady_clock::time_point> retry_at;
  };

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  bool stop_ = false;
  std::thread thread_;
  std::condition_variable watchdog_cv_;
  std::thread watchdog_;
};

}  // namespace dblock::detail
