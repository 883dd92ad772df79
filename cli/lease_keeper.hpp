// SPDX-License-Identifier: Apache-2.0
// Renews the lease `dblock run` holds, on a thread of its own, and keeps the one fact the stop
// timeline is computed from: when the latest renewal that succeeded was sent (by this process's
// steady clock). The database expires the lease no sooner than a TTL after that moment.
//
// Thread-safety: every method may be called from any thread. The keeper is the only user of the
// lease until stop_and_release().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "dblock/lock.hpp"

namespace dblock::cli {

class LeaseKeeper {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts renewing `lease` every `interval`. `sent` is when the statement that took or last
  // renewed the lease was sent. `changed` is called (from the keeper's thread) when the lease is
  // found gone; it must not block.
  LeaseKeeper(Lease& lease, Clock::time_point sent, std::chrono::milliseconds interval,
              std::function<void()> changed);
  ~LeaseKeeper();  // stops the thread; waits for it unless it is stuck (then leaves it behind)
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // When the latest successful renewal (or the acquire) was sent.
  Clock::time_point last_renewal_sent() const noexcept;
  // True once a renewal found the lease gone (released by an operator, expired, taken over).
  bool gone() const noexcept { return gone_.load(); }

  // Stops renewing and releases the lease, unless the keeper's renewal is still stuck at
  // `deadline` (the database not answering). Returns the outcome, or nothing when it could not
  // even try. Throws what release() throws.
  std::optional<ReleaseOutcome> stop_and_release(Clock::time_point deadline);
  // Joins the renewal thread when it has ended (the lease was found gone), before a caller ends
  // the process with _exit; a thread still stuck in a renewal is left alone.
  void join_if_finished();

 private:
  void loop();

  Lease& lease_;
  const std::chrono::milliseconds interval_;
  const std::function<void()> changed_;
  std::atomic<Clock::rep> last_sent_;
  std::atomic<bool> gone_{false};
  std::mutex mutex_;
  std::condition_variable wake_;  // the renewal thread: time to stop
  std::condition_variable idle_;  // nobody uses the lease now
  bool stop_ = false;             // under mutex_
  bool busy_ = false;             // under mutex_: someone uses the lease
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};  // the renewal thread has returned
  std::thread thread_;
};

}  // namespace dblock::cli
