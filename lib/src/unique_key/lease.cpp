// SPDX-License-Identifier: Apache-2.0
// The unique-key lease and held(): purpose and thread-safety in lease.hpp.
#include "unique_key/lease.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dblock/lock_table.hpp"
#include "lease_access.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"
#include "unique_key/live_holds.hpp"

namespace dblock::detail {

namespace {

class UniqueKeyLease final : public LeaseCore {
 public:
  // `handed_over`: the lease came from a hand-over, which told the listener of it (holding).
  UniqueKeyLease(std::shared_ptr<detail::UniqueKeyLockCore> impl, LeaseInfo info,
                 std::function<void(const std::string&)> on_lost, bool handed_over,
                 std::chrono::milliseconds min_hold)
      : LeaseCore(std::move(info), std::move(on_lost)),
        min_hold_ms_(min_hold.count()),
        impl_(std::move(impl)),
        listener_(impl_->own_listener()) {
    if (listener_ && !handed_over) listener_->holding(this->info().key);
  }

  void fence(Connection& conn) override {
    const auto& i = info();
    const std::vector<Arg> args = owner_args(
        i.owner, {{"key", Value(i.key)},
                  {"token", Value(i.fencing_token)},
                  {"lock_delay_ms", Value(static_cast<std::int64_t>(i.lock_delay.count()))}});
    send_fence(conn, impl_->statements, &detail::UniqueKeyLockCore::Statements::fence,
               impl_->dialect, impl_->galera, args, i.key);
  }

 protected:
  ReleaseOutcome do_release() override {
    const auto& i = info();
    // This lease is gone from here on, whatever the statement's fate.
    LiveHolds::instance().remove(impl_->live_id(i.key, i.owner, i.fencing_token));
    // Held here until the release is over: it hands the key over or wakes a waiter.
    struct NotHolding {
      ReleaseListener* listener;
      const std::string& key;
      ~NotHolding() {
        if (listener) listener->not_holding(key);
      }
    } not_holding{listener_, i.key};
    const ReleaseRequest q{i.key,           i.owner,
                           i.fencing_token, "r-" + random_lease_id(),
                           min_hold_ms_,    static_cast<std::int64_t>(i.lock_delay.count())};
    if (successor_ != nullptr) {
      if (auto handed = impl_->hand_off(q, successor_->candidate)) {
        successor_->handed = std::move(handed);
        return ReleaseOutcome::kReleased;
      }
    }
    // A key kept taken for a least time (min_hold) goes to no waiter before then.
    return impl_->release(q, min_hold_ms_ == 0);
  }

  bool do_renew(std::chrono::milliseconds ttl) override {
    const auto& i = info();
    const std::vector<Arg> args = owner_args(
        i.owner, {{"ttl_ms", Value(static_cast<std::int64_t>(ttl.count()))},
                  {"lock_delay_ms", Value(static_cast<std::int64_t>(i.lock_delay.count()))},
                  {"key", Value(i.key)},
                  {"token", Value(i.fencing_token)}});
    // Renewing twice is harmless.
    auto r = impl_->run(&detail::UniqueKeyLockCore::Statements::renew, args, true, this);
    if (!r)
      throw kept_contending("renew of '" + i.key + "'",
                            "the lease ends by its TTL unless a renewal gets through");
    return r->affected_rows() == 1;
  }

  // One read of the key's row, asked only when observed: a later holder's token means taken
  // over; our row still there means it expired on the server (the renewals came too late); no
  // row held means an operator's forced release or the cleaner removed it.
  LossReason why_not_held() noexcept override {
    try {
      const auto& i = info();
      PooledConnection conn = impl_->source.acquire();
      const std::optional<LockRow> row = find_lock(*conn, impl_->options.tables, i.key);
      if (!row || row->hold_count == 0) return LossReason::kRemoved;
      return row->fencing_token > i.fencing_token ? LossReason::kTakenOver : LossReason::kExpired;
    } catch (...) {
      return LossReason::kGone;  // the read failed: the loss stands, its cause unknown
    }
  }

 public:
  // Who the release hands the key to (release_handing_off), and what it gave; set by the
  // releasing thread just before it releases, and never read after.
  struct Successor {
    std::string candidate;
    std::optional<HandedOff> handed;
  };
  Successor* successor_ = nullptr;

 private:
  std::int64_t min_hold_ms_;
  std::shared_ptr<detail::UniqueKeyLockCore> impl_;
  ReleaseListener* listener_;  // told of this lease (holding); nullptr without notify
};

}  // namespace

Lease held(const std::shared_ptr<detail::UniqueKeyLockCore>& impl, LeaseInfo info,
           const LockOptions& options, ReleaseListener::Grant grant, bool handed_over) {
  info.fencing_token = grant.fencing_token;
  // A hand-over counted the lease before it woke the waiter.
  if (!handed_over)
    LiveHolds::instance().add(impl->live_id(info.key, info.owner, info.fencing_token));
  return start_lease(std::make_shared<UniqueKeyLease>(impl, std::move(info), options.on_lost,
                                                      handed_over, options.min_hold),
                     grant.sent, options);
}

std::optional<HandedOff> release_handing_off(Lease& lease, const std::string& candidate) {
  auto* core = dynamic_cast<UniqueKeyLease*>(LeaseAccess::core(lease));
  if (core == nullptr) {
    lease.release();  // an empty handle throws, as Lease::release does
    return std::nullopt;
  }
  // Read by this release alone: once it returns (or throws) the lease is released for good,
  // and no later release of it runs do_release.
  UniqueKeyLease::Successor successor{candidate, std::nullopt};
  core->successor_ = &successor;
  lease.release();
  return std::move(successor.handed);
}

}  // namespace dblock::detail
