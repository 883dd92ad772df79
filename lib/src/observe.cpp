// SPDX-License-Identifier: Apache-2.0
// The process-wide observer and observed acquisitions (observe.hpp, dblock/observer.hpp).
#include "observe.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "dblock/error.hpp"
#include "enum_names.hpp"
#include "lease_access.hpp"

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

std::optional<Lease> run_observed(std::string_view strategy, std::string_view key,
                                  std::optional<std::chrono::milliseconds> timeout,
                                  Observers observers,
                                  const std::function<std::optional<Lease>()>& acquire) {
  observers.each([&](Observer& o) { o.acquire_started({strategy, key, timeout}); });
  AcquireTally tally;
  tally.observers = &observers;
  AcquireTally* const outer = tls_tally;  // an acquisition made inside another one (a lock set)
  tls_tally = &tally;
  const auto started = std::chrono::steady_clock::now();
  AcquireEnded ended{strategy, key, timeout};
  const auto finish = [&] {
    tls_tally = outer;
    ended.waited = std::chrono::steady_clock::now() - started;
    ended.attempts = tally.attempts;
    ended.statements = tally.statements;
  };
  std::optional<Lease> lease;
  try {
    lease = acquire();
  } catch (const std::exception& e) {
    finish();
    ended.outcome = AcquireOutcome::kFailed;
    ended.error = e.what();
    observers.each([&](Observer& o) { o.acquire_ended(ended); });
    throw;
  } catch (...) {
    finish();
    ended.outcome = AcquireOutcome::kFailed;
    ended.error = "an exception that is not a std::exception";
    observers.each([&](Observer& o) { o.acquire_ended(ended); });
    throw;
  }
  finish();
  if (lease) {
    ended.outcome = AcquireOutcome::kAcquired;
    // A try that found the key free sent its statement without passing a waiting loop.
    ended.attempts = std::max(ended.attempts, 1);
    ended.lease = {strategy, key, lease->fencing_token(), lease->lease_id()};
    observers.each([&](Observer& o) { o.acquire_ended(ended); });
    LeaseAccess::core(*lease)->observe(std::move(observers), strategy);
  } else {
    const bool waited = timeout && timeout->count() > 0;
    ended.outcome = waited ? AcquireOutcome::kTimedOut : AcquireOutcome::kBusy;
    ended.attempts = std::max(ended.attempts, 1);
    observers.each([&](Observer& o) { o.acquire_ended(ended); });
  }
  return lease;
}

}  // namespace detail

}  // namespace dblock
