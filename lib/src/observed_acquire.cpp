// SPDX-License-Identifier: Apache-2.0
// Observed acquisitions (observed_acquire.hpp).
#include "observed_acquire.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "lease_access.hpp"

namespace dblock::detail {

std::optional<Lease> run_observed(std::string_view strategy, std::string_view key,
                                  std::optional<std::chrono::milliseconds> timeout,
                                  Observers observers,
                                  const std::function<std::optional<Lease>()>& acquire) {
  observers.each([&](Observer& o) { o.acquire_started({strategy, key, timeout}); });
  AcquireTally tally;
  tally.observers = &observers;
  // An acquisition may run inside another one (a lock set's): the outer one's tally comes back.
  AcquireTally* const outer = swap_tally(&tally);
  const auto started = std::chrono::steady_clock::now();
  AcquireEnded ended{strategy, key, timeout};
  const auto finish = [&] {
    swap_tally(outer);
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

}  // namespace dblock::detail
