// SPDX-License-Identifier: Apache-2.0
#include "renewer.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "dblock/error.hpp"
#include "log.hpp"
#include "per_process.hpp"

namespace dblock::detail {

namespace {
std::chrono::milliseconds interval(const LeaseCore& lease) {
  return std::max(std::chrono::milliseconds(1), lease.ttl() / 3);
}
}  // namespace

namespace {
// The renewer of each process. A forked child makes its own: its parent's (copied with mutexes
// its threads may have held, and threads that do not exist in the child) is never used, stopped
// or destroyed there.
PerProcess<Renewer>& renewers() {
  static PerProcess<Renewer> each;
  return each;
}

// At exit, the renewer of the exiting process stops its threads (before the statics its leases
// may use go away); a child's exit leaves its parent's alone.
void stop_at_exit() {
  if (Renewer* renewer = renewers().find()) renewer->stop();
}
}  // namespace

Renewer& Renewer::instance() {
  if (Renewer* renewer = renewers().find()) return *renewer;
  Renewer& renewer = renewers().get(Clock::system());
  std::call_once(renewer.exit_hook_, [] { std::atexit(stop_at_exit); });
  return renewer;
}

Renewer::Renewer(Clock& clock) : clock_(clock) {}

Renewer::~Renewer() { stop(); }

void Renewer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable() && !watchdog_.joinable() && workers_.empty()) return;
    stop_ = true;
  }
  cv_.notify_all();
  watchdog_cv_.notify_all();
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watchdog_.joinable()) watchdog_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

void Renewer::watch(const std::shared_ptr<LeaseCore>& lease, BootClock::time_point sent) {
  lease->note_renewed(sent, lease->ttl());
  lease->note_watched();
  add(lease, true, sent + interval(*lease), sent + lease->ttl());
}

void Renewer::arm(const std::shared_ptr<LeaseCore>& lease) {
  const auto due =
      lease->expires() ? lease->stop_at() : clock_.now() + LeaseCore::kLossPollInterval;
  if (lease->watched()) {  // its entry is there: the watchdog looks at it from now on
    {
      std::lock_guard lock(mu_);
      if (due >= watchdog_wakes_at_) return;
      watchdog_rescan_ = true;
    }
    watchdog_cv_.notify_all();
    return;
  }
  add(lease, false, BootClock::time_point::max(), due);
}

void Renewer::add(const std::shared_ptr<LeaseCore>& lease, bool renews,
                  BootClock::time_point renew_due, BootClock::time_point watch_due) {
  bool wake_scheduler = false, wake_watchdog = false;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    entries_.push_back(Entry{.lease = lease,
                             .retry_at = std::nullopt,
                             .in_flight = false,
                             .renews = renews,
                             .failures = 0});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch_deadlines(); });
    // Each thread is woken only when the new lease is due before it wakes anyway (at the latest
    // a second from its last look): no thread wake-up per acquisition for TTLs of 3 s and more,
    // which on a machine shared with the database costs more than the statement.
    wake_scheduler = renews && renew_due < scheduler_wakes_at_;
    wake_watchdog = watch_due < watchdog_wakes_at_;
    scheduler_rescan_ = scheduler_rescan_ || wake_scheduler;
    watchdog_rescan_ = watchdog_rescan_ || wake_watchdog;
  }
  if (wake_scheduler) cv_.notify_all();
  if (wake_watchdog) watchdog_cv_.notify_all();
}

void Renewer::reschedule() {
  {
    // Under the mutex: a thread looking at the leases right now may have read the old TTL, and
    // would miss a bare notify (it is not waiting yet); the flag makes it look again.
    std::lock_guard lock(mu_);
    scheduler_rescan_ = true;
    watchdog_rescan_ = true;
  }
  cv_.notify_all();
  watchdog_cv_.notify_all();
}

Renewer::Entry* Renewer::find(const std::shared_ptr<LeaseCore>& lease) {
  for (auto& e : entries_) {
    if (e.lease.lock() == lease) return &e;
  }
  return nullptr;
}

void Renewer::watch_deadlines() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    ++passes_;
    watchdog_rescan_ = false;
    auto now = clock_.now();
    auto next = now + std::chrono::seconds(1);
    std::vector<std::shared_ptr<LeaseCore>> expired, to_stop;
    for (const auto& e : entries_) {
      auto lease = e.lease.lock();
      if (!lease || lease->released()) continue;
      // A lease without a TTL whose loss only its own thread can see (a row lock's transaction)
      // is watched for nothing here: asking lost() from this thread would race its statements.
      if (!lease->expires() && !lease->polled_for_loss()) continue;
      const bool armed = lease->armed() && !lease->stop_requested();
      if (lease->lost()) {  // a session that ended, seen here first: its work stops too
        if (armed) to_stop.push_back(std::move(lease));
        continue;
      }
      if (!lease->expires()) {
        if (armed && lease->polled_for_loss())
          next = std::min(next, now + LeaseCore::kLossPollInterval);
        continue;
      }
      if (armed) {
        const auto stop_at = lease->stop_at();
        if (stop_at <= now) {
          to_stop.push_back(lease);
        } else {
          next = std::min(next, stop_at);
        }
      }
      if (!e.renews) continue;  // not renewed here: lost() counts its TTL by itself
      auto deadline = lease->renewed_at() + lease->ttl();
      if (deadline <= now) {
        expired.push_back(std::move(lease));
      } else {
        next = std::min(next, deadline);
      }
    }
    if (expired.empty() && to_stop.empty()) {
      watchdog_wakes_at_ = next;
      clock_.wait_until(lock, watchdog_cv_, next, [&] { return stop_ || watchdog_rescan_; });
      watchdog_wakes_at_ = BootClock::time_point::min();  // looking now: no wake-up needed
      continue;
    }
    lock.unlock();
    // Stop callbacks and on_lost are the caller's code: never under the mutex.
    for (const auto& lease : to_stop) lease->request_stop();
    for (const auto& lease : expired) {
      if (lease->out_of_time()) lease->mark_lost(LossReason::kExpired);
    }
    lock.lock();
  }
}

std::size_t Renewer::watched() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::size_t Renewer::in_flight() const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.in_flight; }));
}

std::uint64_t Renewer::passes() const {
  std::lock_guard lock(mu_);
  return passes_;
}

void Renewer::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    ++passes_;
    scheduler_rescan_ = false;
    auto now = clock_.now();
    // Drop released, lost and destroyed leases; hand the due ones to the workers.
    auto next = now + std::chrono::seconds(1);
    bool handed = false;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto lease = it->lease.lock();
      // A lease ends here once released or lost (an entry kept for its stop only: once stopped),
      // but an armed one only after the watchdog has requested its stop.
      const bool stopped = !lease || !lease->armed() || lease->stop_requested();
      // (!renews first: lost() is not asked of a lease this thread must not look into.)
      const bool over = lease && (!it->renews || lease->released() || lease->lost());
      if (!lease || (over && !it->in_flight && stopped)) {
        it = entries_.erase(it);
        continue;
      }
      if (it->renews && !it->in_flight && !lease->released() && !lease->lost()) {
        auto due_at = it->retry_at.value_or(lease->renewed_at() + interval(*lease));
        if (due_at <= now) {
          it->in_flight = true;
          queue_.push_back(std::move(lease));
          handed = true;
        } else {
          next = std::min(next, due_at);
        }
      }
      ++it;
    }
    if (handed) {
      // Every queued renewal gets a worker of its own while any is stuck, up to kMaxWorkers.
      while (idle_workers_ < queue_.size() && workers_.size() < kMaxWorkers) {
        ++idle_workers_;
        workers_.emplace_back([this] { work(); });
      }
      work_cv_.notify_all();
    }
    scheduler_wakes_at_ = next;
    clock_.wait_until(lock, cv_, next, [&] { return stop_ || scheduler_rescan_; });
    scheduler_wakes_at_ = BootClock::time_point::min();  // looking now: no wake-up needed
  }
}

void Renewer::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto lease = std::move(queue_.front());
    queue_.pop_front();
    --idle_workers_;
    lock.unlock();
    renew_one(lease);
    lease.reset();
    lock.lock();
    ++idle_workers_;
  }
}

void Renewer::renew_one(const std::shared_ptr<LeaseCore>& lease) {
  bool failed = false;
  std::string why;  // what the failed renewal threw, when logging
  // Not renewed while its holder's renew_if says no: asked again a third of a TTL later, and lost
  // once the TTL has passed (the database frees the key then).
  const bool skipped = !lease->renewal_wanted();
  if (!skipped) {
    try {
      lease->renew(lease->ttl(), true);  // false: gone (renew marked it lost)
    } catch (const std::exception& e) {
      failed = true;  // a fault: try again shortly until the TTL has passed
      if (logging()) why = e.what();
    }
  }
  auto after = clock_.now();
  // A renewal a release cut off (LeaseCore::release) failed because the lease ended, not lost.
  bool give_up =
      (failed || skipped) && !lease->released() && after - lease->renewed_at() >= lease->ttl();
  // What to tell the log hook: made under the mutex, passed on after it, so a slow handler
  // never holds up the renewer.
  std::optional<std::pair<LogLevel, std::string>> message;
  {
    std::lock_guard lock(mu_);
    if (Entry* e = find(lease)) {
      e->in_flight = false;
      if (failed) {
        e->retry_at = after + std::min(interval(*lease), std::chrono::milliseconds(250));
        ++e->failures;
        if (logging() && !give_up && !lease->released()) {
          const auto ms = [](BootClock::duration d) {
            return std::to_string(std::chrono::ceil<std::chrono::milliseconds>(d).count());
          };
          message.emplace(
              LogLevel::kWarning,
              "renewing the lease of key '" + lease->info().key + "' failed (" + why +
                  "); trying again in " + ms(*e->retry_at - after) + " ms; it counts as lost in " +
                  ms(lease->renewed_at() + lease->ttl() - after) + " ms unless a renewal succeeds");
        }
      } else if (skipped) {
        e->retry_at = after + interval(*lease);
      } else {
        if (e->failures > 0 && logging() && !lease->lost()) {
          message.emplace(LogLevel::kInfo,
                          "renewing the lease of key '" + lease->info().key +
                              "' works again, after " + std::to_string(e->failures) +
                              (e->failures == 1 ? " failed try" : " failed tries"));
        }
        e->failures = 0;
        e->retry_at = std::nullopt;
      }
    }
    scheduler_rescan_ = true;
  }
  cv_.notify_all();
  if (message) log(message->first, message->second);
  if (give_up)
    lease->mark_lost(LossReason::kExpired);  // calls on_lost: never under the renewer's mutex
}

}  // namespace dblock::detail
