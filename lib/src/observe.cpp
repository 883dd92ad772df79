// SPDX-License-Identifier: Apache-2.0
// The process-wide observer and observed acquisitions (observe.hpp, dblock/observer.hpp).
#include "observe.hpp"

#include <atomic>
#include <mutex>
#include <utility>

#include "dblock/error.hpp"
#include "enum_names.hpp"

namespace dblock {

Observer::~Observer() = default;

std::string_view to_string(AcquireOutcome outcome) noexcept {
  constexpr auto kNames =
      detail::enum_names<AcquireOutcome::kFailed>({"acquired", "busy", "timed_out", "failed"});
  return kNames.of(outcome, "unknown");
}

std::string_view to_string(LossReason reason) noexcept {
  constexpr auto kNames = detail::enum_names<LossReason::kSessionEnded>(
      {"expired", "taken_over", "removed", "gone", "session_ended"});
  return kNames.of(reason, "unknown");
}

std::string_view to_string(TermEnd why) noexcept {
  constexpr auto kNames = detail::enum_names<TermEnd::kHandedOff>(
      {"returned", "threw", "lost", "stopped", "handed_off"});
  return kNames.of(why, "unknown");
}

namespace {

struct Installed {
  std::atomic<bool> any{false};
  std::mutex mu;
  std::shared_ptr<Observer> observer;
};

Installed& installed() {
  static Installed* i = new Installed;  // never destroyed: renewals may report during exit
  return *i;
}

thread_local detail::AcquireTally* tls_tally = nullptr;

}  // namespace

void set_observer(std::shared_ptr<Observer> next) {
  Installed& i = installed();
  std::lock_guard lock(i.mu);
  i.observer = std::move(next);
  i.any.store(i.observer != nullptr, std::memory_order_relaxed);
}

std::shared_ptr<Observer> observer() {
  Installed& i = installed();
  std::lock_guard lock(i.mu);
  return i.observer;
}

namespace detail {

Observers observers_for(const LockOptions& options) {
  Observers o;
  if (installed().any.load(std::memory_order_relaxed)) o.process = dblock::observer();
  o.local = options.observer;
  return o;
}

AcquireTally* current_tally() noexcept { return tls_tally; }

AcquireTally* swap_tally(AcquireTally* tally) noexcept { return std::exchange(tls_tally, tally); }

void report_pool_exhausted(std::size_t max_size, std::chrono::milliseconds waited) noexcept {
  const PoolExhausted event{max_size, waited};
  if (tls_tally != nullptr && tls_tally->observers != nullptr) {
    tls_tally->observers->each([&](Observer& o) { o.pool_exhausted(event); });
    return;
  }
  if (!installed().any.load(std::memory_order_relaxed)) return;
  try {
    Observers process;
    process.process = dblock::observer();
    process.each([&](Observer& o) { o.pool_exhausted(event); });
  } catch (...) {
  }
}

}  // namespace detail

}  // namespace dblock
