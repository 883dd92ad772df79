// SPDX-License-Identifier: Apache-2.0
// Where the library makes events for observers (dblock/observer.hpp): whom an acquisition and its
// lease report to (Observers), and what the acquisition running on this thread counts (its tries,
// from the waiting loops, and statements, from the drivers) and tells (a fair waiter's place, an
// exhausted pool). The acquisition itself is observed by observed_acquire.hpp. Internal.
//
//   count_statement();  // in DriverConnection::execute: nothing unless an acquisition is observed
//
// Thread-safety: the counters are per thread; Observers is immutable once made.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "dblock/lock.hpp"
#include "dblock/observer.hpp"

namespace dblock::detail {

// The observers an acquisition and its lease report to: the process-wide one when it began,
// then the options' one.
struct Observers {
  std::shared_ptr<Observer> process;
  std::shared_ptr<Observer> local;

  explicit operator bool() const noexcept { return process || local; }
  // Calls f(observer) on each; what an observer throws is dropped.
  template <class F>
  void each(F&& f) const noexcept {
    for (Observer* o : {process.get(), local.get()}) {
      if (o == nullptr) continue;
      try {
        f(*o);
      } catch (...) {
        // An observer's failure must not reach the lock's caller or the renewer.
      }
    }
  }
};

// The observers of an acquisition made with `options`; empty (one relaxed load) when none is
// installed.
Observers observers_for(const LockOptions& options);

// The tries and statements of the observed acquisition running on this thread, and whom it
// reports to.
struct AcquireTally {
  int attempts = 0;
  int statements = 0;
  const Observers* observers = nullptr;
};
// The tally of the innermost observed acquisition on this thread, or nullptr.
AcquireTally* current_tally() noexcept;
// Makes `tally` this thread's (an observed acquisition begins, or, with the one returned, ends);
// returns the one it replaces.
AcquireTally* swap_tally(AcquireTally* tally) noexcept;
// A try at the key, for the acquisition on this thread (if observed).
inline void count_attempt() noexcept {
  if (AcquireTally* t = current_tally()) ++t->attempts;
}
// A statement sent (transaction control included), for the acquisition on this thread.
inline void count_statement() noexcept {
  if (AcquireTally* t = current_tally()) ++t->statements;
}

// Tells the observers of the acquisition running on this thread, if it is observed: f(observer).
template <class F>
void report_to_acquisition(F&& f) noexcept {
  if (AcquireTally* t = current_tally(); t != nullptr && t->observers != nullptr) {
    t->observers->each(f);
  }
}

// A pool had no connection to give: told to the acquisition running on this thread (whose
// observers include the process-wide one), else to the process-wide observer.
void report_pool_exhausted(std::size_t max_size, std::chrono::milliseconds waited) noexcept;

}  // namespace dblock::detail
