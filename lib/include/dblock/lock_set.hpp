// SPDX-License-Identifier: Apache-2.0
/// @file
/// Several keys at once, all or nothing, over any strategy: the transfer between two accounts
/// that must hold both, the job that needs three resources. A LeaseSet holds every key asked for,
/// or the call gives back what it took. Keys are taken one at a time in one global order (their
/// bytes, ascending), so sets never deadlock with each other; the timeout bounds the whole set.
/// Each key is a lease of the strategy with its own fencing token (and, for row and optimistic
/// locks, its own transaction: they commit one after another, not atomically).
///
/// @code
///   dblock::UniqueKeyLock locks(*pool);
///   std::vector<std::string> accounts{"account:17", "account:4"};
///   if (auto both = dblock::acquire_all(locks, accounts, 5s)) {
///     transfer(both->lease("account:17").fencing_token(),
///              both->lease("account:4").fencing_token());
///     both->release();  // or let it go out of scope
///   }
/// @endcode
///
/// Thread-safety: as Lease: a LeaseSet is used by one thread at a time.
///
/// Explained in docs/locks/lock-sets.md.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dblock/export.hpp"
#include "dblock/lock.hpp"

namespace dblock {

namespace detail {
class AnyStop;  // one stop source relaying each lease's (LeaseSet::stop_token)
}  // namespace detail

/// The leases of a set of keys, held together. Move-only; releases every lease on destruction
/// (a transactional strategy's transactions roll back, as a dropped Lease's do).
class DBLOCK_EXPORT LeaseSet {
 public:
  LeaseSet() noexcept;
  explicit LeaseSet(std::vector<Lease> leases) noexcept;
  LeaseSet(LeaseSet&&) noexcept;
  LeaseSet& operator=(LeaseSet&&) noexcept;
  ~LeaseSet();

  /// The leases, in the order they were taken (keys ascending by their bytes).
  const std::vector<Lease>& leases() const noexcept { return leases_; }
  /// The lease on `key`. Throws Error(kInvalidArgument) when the set does not hold it.
  Lease& lease(std::string_view key);
  /// True once any of the leases is lost (Lease::lost()).
  bool lost() const noexcept;
  /// Gives every key back, in the reverse of the order they were taken, each even when an
  /// earlier one failed. Returns kNotHeld when any lease had been lost, otherwise kConflict when
  /// any optimistic commit conflicted, otherwise kDecremented when the owner still holds any key
  /// through a reentrant hold, otherwise kReleased. Throws the first Error once every lease has
  /// been tried. Empties the set.
  ReleaseOutcome release();
  /// A token whose stop is requested as soon as any lease's is (Lease::stop_token): work under
  /// the set stops when any key is about to run out or was lost. Each call also looks at every
  /// lease's clock, as Lease::stop_token does: work that asks before each step sees the stop at
  /// once when its process wakes from a pause past a deadline. Throws Error(kInvalidArgument)
  /// for an empty set.
  std::stop_token stop_token();

 private:
  std::vector<Lease> leases_;
  std::unique_ptr<detail::AnyStop> stop_;  // made by the first stop_token(); dropped first
};

/// One attempt at every key (each a try_acquire): the set, or nothing when another owner holds
/// any of them (or a lease taken was lost before the last key was). Throws Error(kInvalidArgument)
/// before taking anything for an empty set or an invalid key.
DBLOCK_EXPORT std::optional<LeaseSet> try_acquire_all(Lock& lock, std::span<const std::string> keys,
                                                      const LockOptions& options = {});
/// Waits up to `timeout` for the whole set (std::chrono::milliseconds::max(): without a limit).
DBLOCK_EXPORT std::optional<LeaseSet> acquire_all(Lock& lock, std::span<const std::string> keys,
                                                  std::chrono::milliseconds timeout,
                                                  const LockOptions& options = {});

/// Runs fn(set) (or fn(set, set.stop_token())) with every key held and releases them on every
/// path, as with_lock does for one key: returns nothing when the set was not obtained within
/// `timeout` or a commit conflicted (no retry), fn's result (true for a void fn) otherwise, and
/// throws Error(kLeaseLost) instead when any lease was lost by the time fn returned.
template <class Fn>
auto with_locks(Lock& lock, std::span<const std::string> keys, std::chrono::milliseconds timeout,
                const LockOptions& options, Fn&& fn) {
  using R = typename detail::CriticalSection<Fn, LeaseSet>::Result;
  using Out = std::conditional_t<std::is_void_v<R>, bool, R>;
  std::optional<LeaseSet> set = acquire_all(lock, keys, timeout, options);
  if (!set) return std::optional<Out>();
  std::optional<Out> out;
  if constexpr (std::is_void_v<R>) {
    detail::CriticalSection<Fn, LeaseSet>::run(fn, *set);
    out.emplace(true);
  } else {
    out.emplace(detail::CriticalSection<Fn, LeaseSet>::run(fn, *set));
  }
  const bool lost = set->lost();
  const std::string first_key = set->leases().front().key();
  const ReleaseOutcome outcome = set->release();
  if (lost || outcome == ReleaseOutcome::kNotHeld) detail::throw_lease_lost(first_key);
  if (outcome == ReleaseOutcome::kConflict) return std::optional<Out>();
  return out;
}

}  // namespace dblock
