// SPDX-License-Identifier: Apache-2.0
// The unique-key lock's release path: a lease's release (or its hand-over to a waiter, in
// hand_over.cpp), the release_rest that frees holds no live lease accounts for, and the releases
// kept when their fate is unknown (pending_releases.hpp), sent again before the owner's next
// acquire of the key. Thread-safety: see lock_impl.hpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/error.hpp"
#include "log.hpp"
#include "ttl_lease.hpp"
#include "unique_key/live_holds.hpp"
#include "unique_key/lock_impl.hpp"
#include "unique_key/pending_releases.hpp"

namespace dblock {

std::vector<detail::Arg> detail::UniqueKeyLockCore::release_args(
    const detail::ReleaseRequest& q) const {
  return detail::owner_args(q.owner, {{"key", Value(q.key)},
                                      {"token", Value(q.fencing_token)},
                                      {"channel", Value(channel)},
                                      {"release_id", Value(q.release_id)},
                                      {"min_hold_ms", Value(q.min_hold_ms)},
                                      {"lock_delay_ms", Value(q.lock_delay_ms)}});
}

ReleaseOutcome detail::UniqueKeyLockCore::send_release(
    const detail::ReleaseRequest& q, std::string& head,
    std::optional<detail::ReleaseListener::Grant>& grant) {
  // A retry after a lost connection sends the same release id, which the statement
  // recognises as its own earlier attempt (see the release statement), so it is safe to repeat.
  auto r = run(&Statements::release, release_args(q), true, nullptr, kUpdateSetsId);
  if (!r) throw detail::kept_contending("release of '" + q.key + "'", "the lease ends by its TTL");
  if (r->affected_rows() == 0) return ReleaseOutcome::kNotHeld;
  const std::int64_t remaining =
      detail::returned_id(*r, rows, "hold_count").value_or(0) - (release_count_plus_one ? 1 : 0);
  if (rows && options.fair) {
    head = r->at(0, "head").value_or("");
    if (r->at(0, "granted")) {
      grant = detail::ReleaseListener::Grant::granted(r->int64_at(0, "granted"),
                                                      r->int64_at(0, "sent_us"));
    }
  }
  // Counted now, not when the release was first sent: a release kept after a lost connection
  // may be sent again after the owner acquired the key anew (through any UniqueKeyLock on
  // this table), and that live hold must not be freed by release_rest.
  if (remaining > 0 &&
      detail::LiveHolds::instance().count(live_id(q.key, q.owner, q.fencing_token)) == 0 &&
      release_rest(q)) {
    return ReleaseOutcome::kReleased;
  }
  return remaining == 0 ? ReleaseOutcome::kReleased : ReleaseOutcome::kDecremented;
}

bool detail::UniqueKeyLockCore::release_rest(const detail::ReleaseRequest& q) {
  // Idempotent: frees or not.
  auto r = run(&Statements::release_rest, release_args(q), true);
  return r && r->affected_rows() == 1;
}

ReleaseOutcome detail::UniqueKeyLockCore::release(const detail::ReleaseRequest& q,
                                                  bool may_hand_over) {
  const std::string id = holds_id(q.key, q.owner);
  // Waiters in this process are handed the key, or woken as soon as the release is committed.
  detail::ReleaseListener* listener = own_listener();
  bool announced = false;  // releasing() was called
  try {
    if (may_hand_over && listener && hand_over(q, *listener)) return ReleaseOutcome::kReleased;
    if (listener) {
      listener->releasing(q.key);
      announced = true;
    }
    std::string head;
    std::optional<detail::ReleaseListener::Grant> grant;
    ReleaseOutcome outcome = send_release(q, head, grant);
    detail::PendingReleases::instance().forget(id, q.release_id);
    if (listener) listener->released(q.key, outcome == ReleaseOutcome::kReleased, head, grant);
    return outcome;
  } catch (const Error& e) {
    if (announced) listener->released(q.key, false, "");
    if (e.code() == ErrorCode::kConnectionLost || e.code() == ErrorCode::kConnectFailed) {
      detail::PendingReleases::instance().keep(id, {shared_from_this(), q});
      if (detail::logging()) {
        detail::log(LogLevel::kWarning,
                    "releasing key '" + q.key + "' failed (" + e.what() +
                        "); the release is kept and sent again when this owner next takes the "
                        "key here, else the key is free once the lease expires");
      }
    }
    throw;
  }
}

void detail::UniqueKeyLockCore::finish_pending_release(const std::string& key, const Owner& owner) {
  for (const auto& entry : detail::PendingReleases::instance().find(holds_id(key, owner))) {
    const std::shared_ptr<UniqueKeyLockCore> sender = entry.lock.lock();
    if (detail::logging()) {
      detail::log(LogLevel::kInfo,
                  "sending again the release of key '" + key + "' kept after a lost connection");
    }
    (sender ? *sender : *this).release(entry.request);
  }
}

}  // namespace dblock
