// SPDX-License-Identifier: Apache-2.0
// A strategy's public acquire runs through observed_acquire(), which, only while an observer is
// installed (observe.hpp), times the call, counts its tries and statements, reports its start and
// end, and makes the returned lease report its renewals, loss and release (LeaseCore::observe).
// Internal.
//
//   std::optional<Lease> UniqueKeyLock::try_acquire(std::string_view key, const LockOptions& o) {
//     return detail::observed_acquire("unique_key", key, o, std::nullopt, [&] { ...; });
//   }
//
// Thread-safety: as the acquisition it runs.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

#include "dblock/lock.hpp"
#include "observe.hpp"

namespace dblock::detail {

// Runs an observed acquisition (see observed_acquire).
std::optional<Lease> run_observed(std::string_view strategy, std::string_view key,
                                  std::optional<std::chrono::milliseconds> timeout,
                                  Observers observers,
                                  const std::function<std::optional<Lease>()>& acquire);

// Runs `acquire()` (which returns std::optional<Lease>): as it is when nothing observes; else
// reported as an acquisition of `key` by `strategy` that may wait `timeout` (nullopt:
// try_acquire), whose lease then reports to the same observers.
template <class Acquire>
std::optional<Lease> observed_acquire(std::string_view strategy, std::string_view key,
                                      const LockOptions& options,
                                      std::optional<std::chrono::milliseconds> timeout,
                                      Acquire&& acquire) {
  Observers observers = observers_for(options);
  if (!observers) return acquire();
  return run_observed(strategy, key, timeout, std::move(observers), acquire);
}

}  // namespace dblock::detail
