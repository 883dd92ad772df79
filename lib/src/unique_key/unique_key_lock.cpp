// SPDX-License-Identifier: Apache-2.0
// UniqueKeyLock's public calls: try_acquire, the acquire loop (plain, and fair waiting's turns in
// the key's queue), and claim. The parts they use: the statements and how they run
// (statements.cpp), leases and their release (lease.cpp, release.cpp, hand_over.cpp), the
// registries of live holds and kept releases (live_holds.hpp, pending_releases.hpp), a fair
// waiter's queue place (queue_place.hpp). Thread-safety: see dblock/unique_key_lock.hpp.
#include "dblock/unique_key_lock.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "boot_clock.hpp"
#include "dblock/error.hpp"
#include "lease_core.hpp"
#include "metadata.hpp"
#include "observed_acquire.hpp"
#include "retry_until.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"
#include "unique_key/lease.hpp"
#include "unique_key/lock_impl.hpp"
#include "unique_key/queue_place.hpp"
#include "unique_key/release_listener.hpp"

namespace dblock {

namespace {

using detail::held;
using detail::QueuePlace;

// One try for `info` (key, lease id, owner). `seq`: the waiter's place in the key's fair queue
// (nullopt: not queued; unused unless the lock is fair), `waiter_id` its id. `ahead` is set to
// the number of live waiters queued before it where the queue is read first (MySQL), else left
// alone. With `joined` (a fair lock whose acquire joins the queue, and a waiter not queued yet),
// a refused try takes the waiter's place in the same statement (stamped `sent_us`:
// QueuePlace::stamp) and sets `joined` to it.
std::optional<Lease> attempt(const std::shared_ptr<detail::UniqueKeyLockCore>& impl,
                             detail::LeaseInfo info, const LockOptions& options,
                             std::optional<std::int64_t> seq,
                             const std::string* waiter_id = nullptr, std::int64_t* ahead = nullptr,
                             std::optional<std::int64_t>* joined = nullptr,
                             std::int64_t sent_us = 0) {
  impl->finish_pending_release(info.key, info.owner);
  const bool named = seq || joined != nullptr;  // the statement knows the waiter's id
  const std::int64_t place_ttl_ms = impl->options.waiter_ttl.count();
  const std::vector<detail::Arg> args = detail::owner_args(
      info.owner, {{"key", Value(info.key)},
                   {"lease_id", Value(info.lease_id)},
                   {"ttl_ms", Value(static_cast<std::int64_t>(options.ttl.count()))},
                   {"lock_delay_ms", Value(static_cast<std::int64_t>(info.lock_delay.count()))},
                   {"metadata", detail::metadata_param(options.metadata)},
                   {"seq", seq ? Value(*seq) : Value()},
                   {"waiter_id", named ? Value(*waiter_id) : Value()},
                   {"join_ttl_ms", joined ? Value(place_ttl_ms) : Value()},
                   {"sent_us", joined ? Value(sent_us) : Value()}});
  if (impl->options.fair) {
    // Where acquire cannot check the queue itself. A read: safe to repeat.
    auto wait = impl->run(&detail::UniqueKeyLockCore::Statements::fair_check, args, true);
    if (!wait) return std::nullopt;
    if (!wait->empty()) {
      if (ahead != nullptr) *ahead = wait->int64_at(0, "ahead");
      if (wait->int64_at(0, "wait") != 0) return std::nullopt;
    }
  }
  const auto sent = detail::BootClock::now();  // the lease runs from here at the latest
  // A retry reuses the lease id.
  auto r = impl->run(&detail::UniqueKeyLockCore::Statements::acquire, args, true, nullptr,
                     detail::UniqueKeyLockCore::kUpsertSetsId);
  if (!r) return std::nullopt;
  if (joined != nullptr && !r->empty() && r->at(0, "seq")) {
    *joined = r->int64_at(0, "seq");  // refused, and queued
    return std::nullopt;
  }
  auto token = detail::returned_id(*r, impl->rows, "fencing_token");
  if (!token) return std::nullopt;  // held by another owner
  return held(impl, std::move(info), options, {*token, sent, false, 0}, false);
}

// The acquire loop: plain, or fair waiting's turns in the key's queue.
std::optional<Lease> wait_for(const std::shared_ptr<detail::UniqueKeyLockCore>& impl,
                              std::string_view key, std::chrono::milliseconds timeout,
                              const LockOptions& options) {
  const detail::LeaseInfo info = detail::new_ttl_lease(key, options, "the lock TTL");
  const bool forever = detail::is_forever_wait(timeout);
  Backoff backoff(impl->options.backoff);
  detail::ReleaseListener* listener = impl->listener();
  std::optional<detail::ReleaseListener::Interest> interest;
  if (listener) interest.emplace(*listener, info.key);
  auto& clock = detail::Clock::system();
  const auto pause = [&](std::chrono::milliseconds d) {
    if (interest) {
      interest->wait(d);  // a release notification ends it early
    } else {
      clock.sleep_for(d);
    }
  };
  const auto deadline = forever ? detail::Clock::time_point::max() : clock.now() + timeout;
  // The key as a release through this lock object handed it over while this waiter slept, or a
  // release's own statement granted it to `place` (fair, PostgreSQL), after `taking` (what the
  // waiter gives up for it); nothing when no such grant came.
  const auto handed_over = [&](auto&& taking,
                               const QueuePlace* place = nullptr) -> std::optional<Lease> {
    if (!interest) return std::nullopt;
    auto grant = interest->take_grant();
    if (!grant) return std::nullopt;
    // A grant for an older write of the place (a refresh crossed it): the try that follows finds
    // the grant by the lease id, and takes with it the place that refresh may have put back.
    if (grant->elsewhere && (place == nullptr || !place->latest(grant->sent_us))) {
      return std::nullopt;
    }
    taking();
    // A hand-over counted the lease before it woke the waiter; a grant's lease is counted here.
    return held(impl, info, options, *grant, !grant->elsewhere);
  };
  if (!impl->options.fair) {
    // While asleep, a release made through this lock object may hand the key over.
    if (interest) interest->accept_hand_over(info, options.metadata);
    return detail::retry_until(
        clock, timeout, forever, backoff,
        [&]() -> std::optional<Lease> {
          if (auto lease = handed_over([] {})) return lease;
          return attempt(impl, info, options, {});
        },
        [&](std::chrono::milliseconds d) {
          if (interest && interest->held_here()) {
            // A lease of this lock object holds the key: its release hands it over or wakes
            // this waiter, so polling at the slowest pace suffices (against a lease that ends
            // by its TTL instead, or a hold taken elsewhere meanwhile).
            d = std::max(
                d, std::min(impl->options.backoff.max_delay,
                            std::chrono::floor<std::chrono::milliseconds>(deadline - clock.now())));
          }
          pause(d);
        });
  }
  QueuePlace place(*impl, info, options.metadata, clock);
  std::int64_t ahead = -1;  // waiters before this one, where the queue is read (MySQL)
  const auto join = [&] {
    place.join();
    if (interest && place.seq()) interest->queued_as(place.id(), *place.seq());
  };
  // Once queued and asleep, a release through this lock object hands the key over when this
  // waiter heads the queue.
  if (interest) interest->accept_hand_over(info, options.metadata);
  auto got = detail::retry_until(
      clock, timeout, forever, backoff,
      [&]() -> std::optional<Lease> {
        // The hand-over took the place away.
        if (auto lease = handed_over(
                [&] {
                  if (impl->leaves_queue) place.left();
                },
                &place)) {
          return lease;
        }
        if (place.seq() && !place.fresh()) join();
        ahead = -1;
        const bool joining = !place.seq() && (forever || timeout.count() > 0);
        if (joining && impl->joins_queue) {
          // One statement tries and, refused, takes a place. The place is announced first: a
          // release that names this waiter the head before the reply is back still wakes it.
          if (interest) interest->queued_as(place.id(), std::numeric_limits<std::int64_t>::max());
          const auto sent = clock.now();
          std::optional<std::int64_t> seq;
          auto lease = place.taking([&] {
            return attempt(impl, info, options, std::nullopt, &place.id(), &ahead, &seq,
                           place.stamp());
          });
          if (seq) {
            place.placed(*seq, sent);
            if (interest) interest->queued_as(place.id(), *seq);
          }
          return lease;  // the acquire that got the key had no place to leave
        }
        auto lease = attempt(impl, info, options, place.seq(), &place.id(), &ahead);
        if (!lease && joining) {
          join();  // refused: take a place, and try again at once (the key may be free by now)
          lease = attempt(impl, info, options, place.seq(), &place.id(), &ahead);
        }
        if (lease && impl->leaves_queue) place.left();
        return lease;
      },
      [&](std::chrono::milliseconds d) {
        const auto place_due = impl->options.waiter_ttl / 3;  // the place is refreshed in time
        if (interest && (interest->held_here() || interest->heard())) {
          // A lease of this lock object holds the key: its release hands the key to this waiter
          // when it heads the queue, or the head elsewhere is woken. Or this process hears every
          // release: each names the queue's head, and so does a head that leaves a free key.
          // Either way polling slowly suffices (against a lease that ends by its TTL, or a head
          // that died, which no one announces).
          d = std::min(place_due,
                       std::max(d, std::min(impl->options.backoff.max_delay,
                                            std::chrono::floor<std::chrono::milliseconds>(
                                                deadline - clock.now()))));
          pause(d);
          return;
        }
        d = std::min(d, place_due);
        if (ahead >= 0) {
          // Where no release wakes a waiter (MySQL), it polls the sooner the nearer it is to
          // the head: the first three at the backoff's quickest pace, so that each is polling
          // fast by the time the key is its (holds can be shorter than a poll), the rest less
          // often the further back they are.
          constexpr std::int64_t kFast = 3;
          d = std::min(d, impl->options.backoff.min_sleep *
                              (1 + 2 * std::max<std::int64_t>(0, ahead - kFast + 1)));
        }
        pause(d);
      });
  if (got) place.got_key();  // the waiter leaves the queue with the key
  return got;
}

}  // namespace

UniqueKeyLock::UniqueKeyLock(ConnectionSource& source, UniqueKeyLockOptions options)
    : impl_(std::make_shared<detail::UniqueKeyLockCore>(source, std::move(options))) {}

UniqueKeyLock::~UniqueKeyLock() = default;

std::optional<Lease> UniqueKeyLock::try_acquire(std::string_view key, const LockOptions& options) {
  return detail::observed_acquire("unique_key", key, options, std::nullopt, [&] {
    return attempt(impl_, detail::new_ttl_lease(key, options, "the lock TTL"), options,
                   std::nullopt);
  });
}

std::optional<Lease> UniqueKeyLock::acquire(std::string_view key, std::chrono::milliseconds timeout,
                                            const LockOptions& options) {
  return detail::observed_acquire("unique_key", key, options, timeout,
                                  [&] { return wait_for(impl_, key, timeout, options); });
}

namespace {

// A parked waiter of the lock's release listener (ReleaseListener::Interest::park); it keeps the
// lock's core, and so the listener, alive.
class ParkedWatch final : public Lock::ReleaseWatch {
 public:
  ParkedWatch(std::shared_ptr<detail::UniqueKeyLockCore> core, detail::ReleaseListener& listener,
              std::string_view key, std::function<void()> wake)
      : core_(std::move(core)), interest_(listener, std::string(key)) {
    interest_.park(std::move(wake));
  }
  void rearm() override { interest_.rearm(); }

 private:
  std::shared_ptr<detail::UniqueKeyLockCore> core_;  // outlives interest_
  detail::ReleaseListener::Interest interest_;
};

}  // namespace

std::unique_ptr<Lock::ReleaseWatch> UniqueKeyLock::watch_releases(std::string_view key,
                                                                  std::function<void()> wake) {
  detail::ReleaseListener* listener = impl_->listener();  // starts listening, once
  if (listener == nullptr) return nullptr;
  return std::make_unique<ParkedWatch>(impl_, *listener, key, std::move(wake));
}

std::optional<Claim> UniqueKeyLock::claim(std::string_view key, const ClaimOptions& options) {
  validate_lock_key(key);
  Claim claim{std::string(key), 0,
              options.claim_id.empty() ? detail::random_lease_id() : options.claim_id};
  if (claim.claim_id.size() > 64) {
    throw Error(ErrorCode::kInvalidArgument, "a claim id must be at most 64 bytes");
  }
  detail::validate_metadata(options.metadata);
  Owner owner = options.owner ? *options.owner : Owner::current_thread();
  // Tagged so that no lease owner ever equals a claim's owner: a claim is never re-entered,
  // renewed or released by a lease of the same thread.
  owner.thread = "claim:" + owner.thread;
  const std::vector<detail::Arg> args =
      detail::owner_args(owner, {{"key", Value(claim.key)},
                                 {"claim_id", Value(claim.claim_id)},
                                 {"metadata", detail::metadata_param(options.metadata)}});
  // A retry reuses the claim id. A caller's own id may find its earlier claim, left as it was
  // (1 affected row), whose token then is asked again where a trigger cleared it from the reply.
  auto r = impl_->run(&detail::UniqueKeyLockCore::Statements::claim, args, true, nullptr,
                      options.claim_id.empty() ? detail::UniqueKeyLockCore::kUpsertSetsId
                                               : detail::UniqueKeyLockCore::kUpdateSetsId);
  if (!r) return std::nullopt;
  auto token = detail::returned_id(*r, impl_->rows, "fencing_token");
  if (!token) return std::nullopt;
  claim.fencing_token = *token;
  return claim;
}

}  // namespace dblock
