// SPDX-License-Identifier: Apache-2.0
// detail::UniqueKeyLockCore: what the parts of one unique-key lock object share. Its options, its
// statements for each server of its dialect and how one is run (statements.cpp), the ids its
// holds are counted and kept by (live_holds.hpp, pending_releases.hpp), the release path
// (release.cpp) with its hand-over to a waiter (hand_over.cpp), and the release listener. Its
// leases share it (lease.hpp), so it outlives the lock object while they are held. Internal.
//
// Thread-safety: the lock's callers, its leases' releases and the renewer use one core from many
// threads at once. Its members are set at construction and only read after; listener() starts
// the listener once, whichever thread asks first.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dblock/unique_key_lock.hpp"
#include "galera.hpp"
#include "lease_core.hpp"
#include "sql/by_server.hpp"
#include "sql/statement.hpp"
#include "unique_key/pending_releases.hpp"
#include "unique_key/release_listener.hpp"

namespace dblock {

namespace detail {
// A hand-off to another process's candidate that took place (UniqueKeyLockCore::hand_off).
struct HandedOff {
  std::string candidate;  // the owner_thread it went to
  std::int64_t fencing_token = 0;
};
}  // namespace detail

struct detail::UniqueKeyLockCore : std::enable_shared_from_this<detail::UniqueKeyLockCore> {
  // The lock's statements for one server.
  struct Statements {
    detail::Statement acquire, release, release_rest, hand_over, renew, claim;
    detail::Statement fair_check, enqueue, leave;  // fair waiting
    detail::Statement offer, candidate, wake;      // hand-offs to another process's candidate
    detail::Statement fence;
    detail::Statement reread_id;  // MySQL: the session's LAST_INSERT_ID()
  };

  // Throws Error(kInvalidArgument) for a fair lock's waiter_ttl out of its range.
  UniqueKeyLockCore(ConnectionSource& src, UniqueKeyLockOptions opts);
  ~UniqueKeyLockCore();
  UniqueKeyLockCore(const UniqueKeyLockCore&) = delete;
  UniqueKeyLockCore& operator=(const UniqueKeyLockCore&) = delete;

  // Runs one lock statement with run_pooled's retries (ttl_lease.hpp): nullopt when it kept
  // contending. `which` is the statement, bound from `args`, for the server of the connection it
  // runs on; an empty statement (a step that server does not have) is not sent and gives an empty
  // result.
  // `sets_id_from`: for a statement that hands a value back through LAST_INSERT_ID(expr), the
  // affected rows from which its reply must carry one (see returned); 0 for any other.
  std::optional<Result> run(detail::Statement Statements::*which, std::span<const detail::Arg> args,
                            bool idempotent, detail::LeaseCore* renewing = nullptr,
                            std::uint64_t sets_id_from = 0);
  // The affected rows from which a statement's reply must carry its LAST_INSERT_ID(expr): an
  // UPDATE sets it on the row it matched; an INSERT ... ON DUPLICATE KEY UPDATE affects 1 row
  // when it inserted (no UPDATE trigger ran, so the reply has the value) or left the row as it
  // was (a refusal, whose value is 0), and 2 when it changed the row.
  static constexpr std::uint64_t kUpdateSetsId = 1;
  static constexpr std::uint64_t kUpsertSetsId = 2;
  // `r`, run on `conn` by a statement that hands a value back through LAST_INSERT_ID(expr)
  // (MySQL, MariaDB), with that value read again from the session when the reply lost it: a
  // trigger on the lock table (the history of holds) makes the server leave it out, so a reply
  // with `sets_id_from` affected rows or more and a value of 0 is asked again (reread_id). One
  // more round trip, only when a trigger ran; `r` itself elsewhere.
  Result returned(Connection& conn, Result r, std::uint64_t sets_id_from) const;

  // Wakes and hands over to this lock object's waiters (nullptr without notify). On PostgreSQL
  // its thread listens for releases made elsewhere from the first blocking acquire on.
  detail::ReleaseListener* listener() {
    detail::ReleaseListener* l = own_listener();
    if (l == nullptr) return nullptr;
    std::call_once(listening_once, [&] { l->start(); });
    return l;
  }
  // The listener, unless this is a forked child's copy of the lock object (whose listener is its
  // parent's: its thread does not run here); waiters then poll, and releases wake no one here.
  detail::ReleaseListener* own_listener() const noexcept {
    return listener_ && !listener_->made_elsewhere() ? listener_.get() : nullptr;
  }

  ConnectionSource& source;
  UniqueKeyLockOptions options;
  Dialect dialect;
  // The PendingReleases id of `owner`'s holds of `key` through this lock's table.
  std::string holds_id(const std::string& key, const Owner& owner) const {
    return holds_scope + key + '\n' + owner.host + '\n' + owner.process + '\n' + owner.thread;
  }
  // The LiveHolds id of `owner`'s holds of `key` with `token` through this lock's table.
  std::string live_id(const std::string& key, const Owner& owner, std::int64_t token) const {
    return holds_id(key, owner) + '\n' + std::to_string(token);
  }

  // The arguments of the release and release_rest statements.
  std::vector<detail::Arg> release_args(const detail::ReleaseRequest& q) const;
  // `head`: the fair queue's head the release reported, when it freed the key; `grant`: what
  // it gave the head, when it granted the key instead (PostgreSQL, fair).
  ReleaseOutcome send_release(const detail::ReleaseRequest& q, std::string& head,
                              std::optional<detail::ReleaseListener::Grant>& grant);
  // Frees the holds left behind by acquires whose reply was lost (release_rest). True
  // when it did.
  bool release_rest(const detail::ReleaseRequest& q);

  // Hands the key to a waiter asleep in this lock object (hand_over), if one accepts it and
  // this release would free the key (fair: if it heads the key's queue); true when it did. A
  // release that only drops a hold of several, or whose lease is gone, hands nothing over and
  // leaves it to the plain release.
  bool hand_over(const detail::ReleaseRequest& q, detail::ReleaseListener& listener);
  // Hands the key to a candidate registered for it (offer; Election's campaigns), of any
  // process: `candidate` (an owner_thread), or the earliest registered when empty. The holder's
  // only hold moves to the candidate with a new token (hand_over, to a lease id made up here,
  // which the candidate's next acquire re-enters), and the key's waiters are told to try now.
  // The candidate's name and new token when it did; nothing when no such candidate is
  // registered live, or this release would not free the key (the plain release then decides).
  std::optional<HandedOff> hand_off(const detail::ReleaseRequest& q, const std::string& candidate);
  // Sends a release (and, when it leaves holds no lease here accounts for, release_rest), or,
  // for a lease's own release (`may_hand_over`), a hand-over to a waiter. When the connection
  // fails on the way and on the retry, nobody knows whether the server applied it: it is kept,
  // and the owner's next acquire of the key sends it again first. Else that acquire would
  // re-enter the hold the caller was told is gone and get its old fencing token back (as after a
  // server crash that lost the release).
  ReleaseOutcome release(const detail::ReleaseRequest& q, bool may_hand_over = false);
  // Sends the releases kept for `owner`'s holds of `key`, if any are. Throws (and keeps them)
  // while the server cannot be reached.
  void finish_pending_release(const std::string& key, const Owner& owner);

  detail::ByServer<Statements> statements;
  std::string holds_scope;
  bool rows;                    // results come back in rows (else in LAST_INSERT_ID())
  bool release_count_plus_one;  // see UniqueKeySql
  bool leaves_queue;            // an acquire that gets the key deletes the waiter's place
  bool joins_queue;             // a refused acquire can take the waiter's place (join_ttl_ms)
  std::string channel;
  detail::GaleraCheck galera;  // fence() refuses a Galera node
  // With notify, from construction on, so that every lease of this lock object is counted
  // (holding) and every release can hand over; it starts listening in listener().
  std::unique_ptr<detail::ReleaseListener> listener_;
  std::once_flag listening_once;
};

}  // namespace dblock
