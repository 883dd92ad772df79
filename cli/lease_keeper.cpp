// SPDX-License-Identifier: Apache-2.0
#include "lease_keeper.hpp"

#include <utility>

namespace dblock::cli {

LeaseKeeper::LeaseKeeper(Lease& lease, Clock::time_point sent, std::chrono::milliseconds interval,
                         std::function<void()> changed)
    : lease_(lease),
      interval_(interval),
      changed_(std::move(changed)),
      last_sent_(sent.time_since_epoch().count()) {
  thread_ = std::thread([this] { loop(); });
}

LeaseKeeper::~LeaseKeeper() {
  std::unique_lock<std::mutex> lock(mutex_);
  stop_ = true;
  wake_.notify_all();
  // A renewal stuck on a connection that stopped answering cannot be interrupted; `run` ends
  // the process with _exit in that case, so the thread never outlives what it uses.
  const bool idle = idle_.wait_for(lock, std::chrono::milliseconds(100), [this] { return !busy_; });
  lock.unlock();
  if (idle) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

LeaseKeeper::Clock::time_point LeaseKeeper::last_renewal_sent() const noexcept {
  return Clock::time_point(Clock::duration(last_sent_.load()));
}

void LeaseKeeper::join_if_finished() {
  if (finished_.load() && thread_.joinable()) thread_.join();
}

void LeaseKeeper::loop() {
  struct Finished {
    std::atomic<bool>& flag;
    ~Finished() { flag = true; }
  } finished{finished_};
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_ || stopping_ || !lease_.valid()) return;
    busy_ = true;  // the lease is this thread's until busy_ is false again
    lock.unlock();
    const Clock::time_point sent = Clock::now();
    bool held = true;
    try {
      held = lease_.renew();
      if (held) last_sent_ = sent.time_since_epoch().count();
    } catch (const Error&) {
      // Unreachable for now: try again at the next interval; the stop timeline runs from the
      // last renewal that succeeded.
    }
    lock.lock();
    busy_ = false;
    idle_.notify_all();
    if (!held) {
      gone_ = true;
      lock.unlock();
      changed_();
      return;
    }
  }
}

std::optional<ReleaseOutcome> LeaseKeeper::stop_and_release(Clock::time_point deadline) {
  stopping_ = true;
  std::unique_lock<std::mutex> lock(mutex_);
  stop_ = true;
  wake_.notify_all();
  if (!idle_.wait_until(lock, deadline, [this] { return !busy_; })) return std::nullopt;
  busy_ = true;
  lock.unlock();
  struct Idle {
    LeaseKeeper& keeper;
    ~Idle() {
      {
        std::lock_guard<std::mutex> relock(keeper.mutex_);
        keeper.busy_ = false;
      }
      keeper.idle_.notify_all();
    }
  } idle{*this};
  if (gone_) return ReleaseOutcome::kNotHeld;
  return lease_.release();
}

}  // namespace dblock::cli
