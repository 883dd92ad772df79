// SPDX-License-Identifier: Apache-2.0
// The background renewer: renews every auto-renew lease of the process at a third of its TTL.
// A renewal that finds the lease gone marks it lost (and calls its on_lost). A renewal that fails
// with an error is retried shortly; once a whole TTL has passed since the last successful renewal
// was sent the lease is marked lost too, since the database will have expired it.
//
// One scheduling thread decides which leases are due and hands each renewal to a worker thread,
// so a renewal stuck on a connection that stopped answering holds back only its own lease: the
// others, on healthy connections or other databases, are renewed by other workers (a lease is
// never renewed twice at once; workers are added while all are busy, up to kMaxWorkers). A
// second thread (the watchdog) marks a lease lost, and calls its on_lost, as soon as a whole TTL
// has passed since its last successful renewal was sent, whatever the renewals are doing. The
// watchdog also requests the stop of every armed lease (one whose stop token a caller took, auto-
// renewed or not) when its stop deadline passes, and looks every LeaseCore::kLossPollInterval at
// armed leases that do not expire but whose loss it can see (session locks). A renewal is
// skipped while the lease's renew_if says no: it then runs out at its TTL.
// Times are read, and waits timed, on a Clock: Clock::system() (CLOCK_BOOTTIME, which counts a
// suspend as the database's clock does) for instance(), a simulated clock in the unit tests.
// Internal.
//
// Released leases drop out at the next tick; the threads stop at the exit of the process that
// started them (never at a forked child's: see instance()).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "lease_core.hpp"

namespace dblock::detail {

class Renewer {
 public:
  static constexpr std::size_t kMaxWorkers = 16;

  // The calling process's renewer, on Clock::system(); a forked child gets one of its own (its
  // parent's is never used, stopped or destroyed there). Stopped at the process's exit.
  static Renewer& instance();
  // A renewer of its own on `clock` (tests); the leases it watches must run on the same clock.
  explicit Renewer(Clock& clock);
  ~Renewer();
  Renewer(const Renewer&) = delete;
  Renewer& operator=(const Renewer&) = delete;

  // Stops and joins the threads; leases watched are renewed no more. Idempotent.
  void stop();

  // Starts renewing `lease` every ttl / 3. `sent` is when the acquiring statement was sent: the
  // lease is valid for a TTL from then at most.
  void watch(const std::shared_ptr<LeaseCore>& lease, BootClock::time_point sent);
  // Watches `lease`'s stop deadline (LeaseCore::stop_at), or its loss for a lease that does not
  // expire, and requests its stop when either comes; renews it only if watch() was called too.
  // Call it once per lease (LeaseCore::arm() says when).
  void arm(const std::shared_ptr<LeaseCore>& lease);
  // Wakes the thread to recompute when leases are due (after a lease's TTL changed).
  void reschedule();
  // Leases currently watched (for tests and metrics).
  std::size_t watched() const;
  // How many times the scheduling thread and the watchdog have looked at the leases (for tests:
  // an acquisition with a TTL of 3 s or more wakes neither).
  std::uint64_t passes() const;
  // Renewals handed to a worker and not finished yet (for tests: zero once the renewer is idle).
  std::size_t in_flight() const;

 private:
  struct Entry {
    std::weak_ptr<LeaseCore> lease;
    // Set while renewals fail: when to try again. Otherwise a lease is due a third of its TTL
    // after its latest renewal (LeaseCore::renewed_at()).
    std::optional<BootClock::time_point> retry_at;
    bool in_flight = false;  // a worker is renewing it
    bool renews = true;      // false: watched for its stop only (arm() without watch())
    int failures = 0;        // renewals that failed in a row
  };

  void run();
  void work();
  void renew_one(const std::shared_ptr<LeaseCore>& lease);
  void watch_deadlines();
  // Adds an entry for `lease` (nothing once stopped), starting the threads; wakes each thread
  // whose due time (`renew_due` when it `renews`, `watch_due`) comes before it wakes anyway.
  void add(const std::shared_ptr<LeaseCore>& lease, bool renews, BootClock::time_point renew_due,
           BootClock::time_point watch_due);
  Entry* find(const std::shared_ptr<LeaseCore>& lease);  // under mu_

  Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  bool stop_ = false;
  std::thread thread_;
  std::condition_variable watchdog_cv_;
  std::thread watchdog_;
  // When each thread next looks at the leases by itself (min: looking now, or about to start).
  BootClock::time_point scheduler_wakes_at_ = BootClock::time_point::min();
  BootClock::time_point watchdog_wakes_at_ = BootClock::time_point::min();
  std::uint64_t passes_ = 0;
  // Set (under mu_) when a thread must look again before it sleeps: a notify alone is lost
  // while the thread is busy looking rather than waiting.
  bool scheduler_rescan_ = false;
  bool watchdog_rescan_ = false;
  // Renewals handed to the workers, and the workers.
  std::condition_variable work_cv_;
  std::deque<std::shared_ptr<LeaseCore>> queue_;
  std::vector<std::thread> workers_;
  std::size_t idle_workers_ = 0;
  std::once_flag exit_hook_;  // instance(): the stop at exit is registered once
};

}  // namespace dblock::detail
