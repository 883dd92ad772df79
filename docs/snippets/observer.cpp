#include <atomic>
#include <chrono>
#include <cstdint>
#include <dblock/observer.hpp>
#include <memory>

// Counters a service exports as metrics: acquisitions by outcome, the time spent waiting for
// locks, leases lost, and renewals that failed (each one a warning that a loss may follow).
class LockMetrics final : public dblock::Observer {
 public:
  void acquire_ended(const dblock::AcquireEnded& e) override {
    outcomes_[static_cast<int>(e.outcome)].fetch_add(1, std::memory_order_relaxed);
    if (e.outcome == dblock::AcquireOutcome::kAcquired) {
      wait_us_.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(e.waited).count(),
                         std::memory_order_relaxed);
    }
  }
  void renewal_failed(const dblock::RenewalFailed&) override {
    renewals_failed_.fetch_add(1, std::memory_order_relaxed);
  }
  void lost(const dblock::LeaseLost&) override { lost_.fetch_add(1, std::memory_order_relaxed); }

  std::int64_t acquired() const {
    return outcomes_[static_cast<int>(dblock::AcquireOutcome::kAcquired)].load();
  }
  std::int64_t lost() const { return lost_.load(); }

 private:
  std::atomic<std::int64_t> outcomes_[4]{};
  std::atomic<std::int64_t> wait_us_{0}, renewals_failed_{0}, lost_{0};
};

// Installed once, at start-up, for every lock of the process.
std::shared_ptr<LockMetrics> install_lock_metrics() {
  auto metrics = std::make_shared<LockMetrics>();
  dblock::set_observer(metrics);
  return metrics;
}
