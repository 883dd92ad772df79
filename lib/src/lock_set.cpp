// SPDX-License-Identifier: Apache-2.0
#include "dblock/lock_set.hpp"

#include <algorithm>
#include <memory>
#include <stop_token>
#include <vector>

#include "any_stop.hpp"
#include "clock.hpp"
#include "strategy_rules.hpp"

namespace dblock {

namespace {

// The keys in the one order every set is taken in, each once; validated before anything is
// taken.
std::vector<std::string_view> ordered(std::span<const std::string> keys) {
  if (keys.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "a lock set needs at least one key");
  }
  std::vector<std::string_view> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) {
    validate_lock_key(key);
    out.emplace_back(key);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Gives back the leases taken so far, newest first, as dropped leases (a release, or a
// transactional strategy's rollback: nothing of a critical section ran), never throwing.
void give_back(std::vector<Lease>& taken) noexcept {
  while (!taken.empty()) taken.pop_back();
}

// Takes the keys in order with `take` (a try or a wait). Returns the set only when every lease
// is still held once the last key is taken: a lease lost meanwhile (its session killed, its TTL
// run out while a later key was waited for) may already be another owner's. Otherwise, and on
// the first key not obtained or an error, gives back what it took and returns nothing (rethrows).
template <class Take>
std::optional<LeaseSet> take_in_order(const std::vector<std::string_view>& keys, Take&& take) {
  std::vector<Lease> taken;
  taken.reserve(keys.size());
  try {
    for (std::string_view key : keys) {
      std::optional<Lease> lease = take(key);
      if (!lease) {
        give_back(taken);
        return std::nullopt;
      }
      taken.push_back(std::move(*lease));
    }
  } catch (...) {
    give_back(taken);
    throw;
  }
  if (std::any_of(taken.begin(), taken.end(), [](const Lease& l) { return l.lost(); })) {
    give_back(taken);
    return std::nullopt;
  }
  return LeaseSet(std::move(taken));
}

}  // namespace

LeaseSet::LeaseSet() noexcept = default;
LeaseSet::LeaseSet(std::vector<Lease> leases) noexcept : leases_(std::move(leases)) {}
LeaseSet::LeaseSet(LeaseSet&&) noexcept = default;
LeaseSet::~LeaseSet() = default;

LeaseSet& LeaseSet::operator=(LeaseSet&& other) noexcept {
  if (this != &other) {
    stop_.reset();  // before the leases it listens to go
    leases_ = std::move(other.leases_);
    stop_ = std::move(other.stop_);
  }
  return *this;
}

std::stop_token LeaseSet::stop_token() {
  if (leases_.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "this lease set is empty (released or moved from); acquire the keys again");
  }
  // Each lease's token looks at its clock as it is asked for (Lease::stop_token), so the set's
  // asks on every call: work that wakes from a pause past a deadline sees the stop at once.
  std::vector<std::stop_token> tokens;
  bool given_back = false;  // a lease released on its own through lease(key): its stop came
  for (const Lease& lease : leases_) {
    if (!lease.valid()) {
      given_back = true;
      continue;
    }
    std::stop_token token = lease.stop_token();
    if (!stop_) tokens.push_back(std::move(token));
  }
  if (!stop_) stop_ = std::make_unique<detail::AnyStop>(tokens);
  if (given_back) stop_->request_stop();
  return stop_->token();
}

Lease& LeaseSet::lease(std::string_view key) {
  for (Lease& l : leases_) {
    if (l.valid() && l.key() == key) return l;
  }
  throw Error(ErrorCode::kInvalidArgument, "this lease set does not hold '" + std::string(key) +
                                               "'; ask for a key it was acquired with");
}

bool LeaseSet::lost() const noexcept {
  return std::any_of(leases_.begin(), leases_.end(), [](const Lease& l) { return l.lost(); });
}

ReleaseOutcome LeaseSet::release() {
  // The set's token stops as the first lease is given back.
  std::unique_ptr<detail::AnyStop> stop = std::move(stop_);
  std::vector<Lease> leases = std::move(leases_);
  leases_.clear();
  bool not_held = false, conflict = false, decremented = false;
  std::optional<Error> first_error;
  for (auto it = leases.rbegin(); it != leases.rend(); ++it) {
    if (!it->valid()) continue;
    try {
      switch (it->release()) {
        case ReleaseOutcome::kReleased:
          break;
        case ReleaseOutcome::kDecremented:
          decremented = true;
          break;
        case ReleaseOutcome::kNotHeld:
          not_held = true;
          break;
        case ReleaseOutcome::kConflict:
          conflict = true;
          break;
      }
    } catch (const Error& e) {
      if (!first_error) first_error = e;
    }
  }
  if (first_error) throw *first_error;
  if (not_held) return ReleaseOutcome::kNotHeld;
  if (conflict) return ReleaseOutcome::kConflict;
  return decremented ? ReleaseOutcome::kDecremented : ReleaseOutcome::kReleased;
}

std::optional<LeaseSet> try_acquire_all(Lock& lock, std::span<const std::string> keys,
                                        const LockOptions& options) {
  return take_in_order(ordered(keys),
                       [&](std::string_view key) { return lock.try_acquire(key, options); });
}

std::optional<LeaseSet> acquire_all(Lock& lock, std::span<const std::string> keys,
                                    std::chrono::milliseconds timeout, const LockOptions& options) {
  const bool forever = detail::is_forever_wait(timeout);
  const std::vector<std::string_view> in_order = ordered(keys);
  detail::Clock& clock = detail::Clock::system();
  const auto deadline = forever ? detail::Clock::time_point::max() : clock.now() + timeout;
  bool refused = false;  // a key was not obtained (the wait ran out, or the strategy gave up)
  auto take = [&](std::string_view key) {
    auto left = std::chrono::milliseconds::max();
    if (!forever) {
      left = std::max(std::chrono::milliseconds(0),
                      std::chrono::ceil<std::chrono::milliseconds>(deadline - clock.now()));
    }
    std::optional<Lease> lease = lock.acquire(key, left, options);
    if (!lease) refused = true;
    return lease;
  };
  // A set given back for a lease lost on the way is asked for again while time is left.
  for (;;) {
    std::optional<LeaseSet> set = take_in_order(in_order, take);
    if (set || refused || (!forever && clock.now() >= deadline)) return set;
  }
}

}  // namespace dblock
