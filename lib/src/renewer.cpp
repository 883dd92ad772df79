#include "renewer.hpp"

#include <algorithm>

#include "dblock/error.hpp"

namespace dblock::detail {

namespace {
std::chrono::milliseconds interval(const LeaseCore& lease) {
  return std::max(std::chrono::milliseconds(1), lease.info().ttl / 3);
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
  if (thread_.joinable()) thread_.join();
}

void Renewer::watch(const std::shared_ptr<LeaseCore>& lease) {
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    entries_.push_back(Entry{lease, now + interval(*lease), now});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  cv_.notify_all();
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
      if (it->due <= now) {
        due.push_back(std::move(lease));
      } else {
        next = std::min(next, it->due);
      }
      ++it;
    }
    if (due.empty()) {
      cv_.wait_until(lock, next);
      continue;
    }
    lock.unlock();
    for (const auto& lease : due) {
      bool renewed = false;
      bool failed = false;
      try {
        renewed = lease->renew(lease->info().ttl);  // false: gone (renew marked it lost)
      } catch (const std::exception&) {
        failed = true;  // a fault: try again next tick until the TTL has passed
      }
      auto after = std::chrono::steady_clock::now();
      bool give_up = false;
      {
        std::lock_guard relock(mu_);
        for (auto& e : entries_) {
          if (e.lease.lock() != lease) continue;
          if (renewed) e.last_renewed = after;
          give_up = failed && after - e.last_renewed >= lease->info().ttl;
          e.due = after + (failed ? std::min(interval(*lease), std::chrono::milliseconds(250))
                                  : interval(*lease));
        }
      }
      if (give_up) lease->mark_lost();  // calls on_lost: never under the renewer's mutex
    }
    lock.lock();
  }
}

}  // namespace dblock::detail
