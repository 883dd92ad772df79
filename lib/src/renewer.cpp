#include "renewer.hpp"

#include <algorithm>

#include "dblock/error.hpp"

namespace dblock::detail {

namespace {
std::chrono::milliseconds interval(const LeaseCore& lease) {
  return std::max(std::chrono::milliseconds(1), lease.ttl() / 3);
}
}  // namespace

Renewer& Renewer::instance() {
  static Renewer renewer;  // stopped and joined by its destructor at exit
  return renewer;
}

Renewer::~Renewer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  watchdog_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

void Renewer::watch(const std::shared_ptr<LeaseCore>& lease,
                    std::chrono::steady_clock::time_point sent) {
  lease->note_renewed(sent, lease->ttl());
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    entries_.push_back(Entry{lease, std::nullopt});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch_deadlines(); });
  }
  cv_.notify_all();
  watchdog_cv_.notify_all();
}

void Renewer::reschedule() {
  cv_.notify_all();
  watchdog_cv_.notify_all();
}

void Renewer::watch_deadlines() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::seconds(1);
    std::vector<std::shared_ptr<LeaseCore>> expired;
    for (const auto& e : entries_) {
      auto lease = e.lease.lock();
      if (!lease || lease->released() || lease->lost()) continue;
      auto deadline = lease->renewed_at() + lease->ttl();
      if (deadline <= now) {
        expired.push_back(std::move(lease));
      } else {
        next = std::min(next, deadline);
      }
    }
    if (expired.empty()) {
      watchdog_cv_.wait_until(lock, next);
      continue;
    }
    lock.unlock();
    for (const auto& lease : expired) {
      if (lease->out_of_time()) lease->mark_lost();  // calls on_lost: never under the mutex
    }
    lock.lock();
  }
}

std::size_t Renewer::watched() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void Renewer::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto now = std::chrono::steady_clock::now();
    // Drop released, lost and destroyed leases; collect the due ones.
    std::vector<std::shared_ptr<LeaseCore>> due;
    auto next = now + std::chrono::seconds(1);
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto lease = it->lease.lock();
      if (!lease || lease->released() || lease->lost()) {
        it = entries_.erase(it);
        continue;
      }
      auto due_at = it->retry_at.value_or(lease->renewed_at() + interval(*lease));
      if (due_at <= now) {
        due.push_back(std::move(lease));
      } else {
        next = std::min(next, due_at);
      }
      ++it;
    }
    if (due.empty()) {
      cv_.wait_until(lock, next);
      continue;
    }
    lock.unlock();
    for (const auto& lease : due) {
      bool failed = false;
      try {
        lease->renew(lease->ttl());  // false: gone (renew marked it lost)
      } catch (const std::exception&) {
        failed = true;  // a fault: try again shortly until the TTL has passed
      }
      auto after = std::chrono::steady_clock::now();
      bool give_up = failed && after - lease->renewed_at() >= lease->ttl();
      {
        std::lock_guard relock(mu_);
        for (auto& e : entries_) {
          if (e.lease.lock() != lease) continue;
          e.retry_at = failed ? std::optional(after + std::min(interval(*lease),
                                                               std::chrono::milliseconds(250)))
                              : std::nullopt;
        }
      }
      if (give_up) lease->mark_lost();  // calls on_lost: never under the renewer's mutex
    }
    lock.lock();
  }
}

}  // namespace dblock::detail
