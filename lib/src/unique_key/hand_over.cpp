// SPDX-License-Identifier: Apache-2.0
// The hand-over: a lease's release that moves the key straight to a waiter asleep in the same
// lock object (one statement, one commit, a new fencing token), so that no other owner can take
// the key in between; and the hand-off, the same statement to a candidate of any process that
// registered the lease it would hold (Election::hand_off). The waiting side is
// release_listener.hpp; the mechanics are explained in docs/internals/waiting.md.
// Thread-safety: see lock_impl.hpp.
#include <optional>
#include <string>
#include <vector>

#include "boot_clock.hpp"
#include "dblock/error.hpp"
#include "metadata.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"
#include "unique_key/live_holds.hpp"
#include "unique_key/lock_impl.hpp"

namespace dblock {

namespace {

// Who a hand_over statement gives the key to, and with what lease.
struct Successor {
  const Owner& owner;
  const std::string& lease_id;
  std::int64_t ttl_ms;
  std::int64_t lock_delay_ms;
  Value metadata;
  const std::string& waiter_id;
  bool any_holds;  // the holder's other holds may go too (UniqueKeySql::hand_over)
};

// The hand_over statement's arguments: the holder's release `q` and the successor's lease.
std::vector<detail::Arg> hand_over_args(const detail::ReleaseRequest& q, const Successor& to) {
  return detail::owner_args(q.owner, {{"key", Value(q.key)},
                                      {"token", Value(q.fencing_token)},
                                      {"to_lease_id", Value(to.lease_id)},
                                      {"to_host", Value(to.owner.host)},
                                      {"to_process", Value(to.owner.process)},
                                      {"to_thread", Value(to.owner.thread)},
                                      {"ttl_ms", Value(to.ttl_ms)},
                                      {"lock_delay_ms", Value(q.lock_delay_ms)},
                                      {"to_lock_delay_ms", Value(to.lock_delay_ms)},
                                      {"metadata", to.metadata},
                                      {"to_waiter_id", Value(to.waiter_id)},
                                      {"any_holds", Value(std::int64_t{to.any_holds ? 1 : 0})}});
}

}  // namespace

bool detail::UniqueKeyLockCore::hand_over(const detail::ReleaseRequest& q,
                                          detail::ReleaseListener& listener) {
  // Another live lease of this owner here shares the row, so this release only drops a hold.
  if (detail::LiveHolds::instance().count(live_id(q.key, q.owner, q.fencing_token)) > 0)
    return false;
  if (listener.asleep(q.key) == 0) return false;  // no one to hand it to
  // The connection first: a claimed waiter sleeps until the statement's outcome, even past its
  // own timeout, so no wait for the pool may come in between.
  PooledConnection conn = source.acquire();
  // Fair: the queued waiter here with the lowest place, and only if it heads the queue.
  detail::ReleaseListener::Interest* waiter = listener.claim_offer(q.key, q.owner, options.fair);
  if (waiter == nullptr) return false;
  std::optional<detail::ReleaseListener::Grant> grant;
  // The claimed waiter sleeps until resolved, on every path out of here. Not handed over (or its
  // fate unknown), it goes on trying with its lease id, which recognises a hand-over the server
  // applied.
  struct Resolve {
    detail::ReleaseListener& listener;
    detail::ReleaseListener::Interest& waiter;
    std::optional<detail::ReleaseListener::Grant>& grant;
    ~Resolve() { listener.resolve(waiter, grant); }
  } resolve{listener, *waiter, grant};
  const detail::LeaseInfo& to = waiter->lease();
  const std::vector<detail::Arg> args =
      hand_over_args(q, {to.owner, to.lease_id, static_cast<std::int64_t>(to.ttl.count()),
                         static_cast<std::int64_t>(to.lock_delay.count()),
                         detail::metadata_param(waiter->metadata()), waiter->waiter_id(), false});
  const auto sent = detail::BootClock::now();  // the waiter's lease runs from here at the latest
  std::optional<Result> r;
  for (bool retried = false;; retried = true) {
    try {
      const detail::Statement& statement = statements[conn->server()].hand_over;
      r = returned(*conn, conn->execute(statement.sql(), statement.bind(args)), kUpdateSetsId);
      break;
    } catch (const Error& e) {
      // Contention: not now; the plain release decides. A lost connection: once more, and a
      // hand-over the server applied is found carrying the waiter's lease id (the same token).
      if (detail::is_write_contention(e.code())) return false;
      if (e.code() != ErrorCode::kConnectionLost || retried) throw;
      conn = source.acquire();
    }
  }
  if (!rows && r->affected_rows() != 1) return false;
  const std::optional<std::int64_t> token = detail::returned_id(*r, rows, "fencing_token");
  if (!token) return false;
  // Counted before the waiter wakes: another thread of the waiter's owner that re-enters and
  // releases meanwhile must find this hold live (else release_rest would free the row).
  detail::LiveHolds::instance().add(live_id(q.key, to.owner, *token));
  listener.holding(q.key);  // for the waiter's lease, before this release stops holding
  grant = detail::ReleaseListener::Grant{*token, sent, false, 0};
  return true;
}

std::optional<detail::HandedOff> detail::UniqueKeyLockCore::hand_off(
    const detail::ReleaseRequest& q, const std::string& candidate) {
  // Another live lease of this owner here shares the row: this release only drops a hold.
  if (detail::LiveHolds::instance().count(live_id(q.key, q.owner, q.fencing_token)) > 0)
    return std::nullopt;
  const std::vector<detail::Arg> find = detail::owner_args(
      q.owner,
      {{"key", Value(q.key)}, {"to_thread", candidate.empty() ? Value() : Value(candidate)}});
  std::optional<Result> found;
  try {
    found = run(&Statements::candidate, find, true);  // a read
  } catch (const Error&) {
    // No candidate found (before migration 0010, say): nothing was handed; the plain release
    // decides, and meets a lost connection as it does.
    return std::nullopt;
  }
  if (!found || found->empty()) return std::nullopt;
  const Owner to{found->at(0, "owner_host").value_or(""),
                 found->at(0, "owner_process").value_or(""),
                 found->at(0, "owner_thread").value_or("")};
  const std::optional<std::string>& metadata = found->at(0, "metadata");
  // Made up here: the candidate's acquire, under its own lease id, re-enters the hold it now
  // owns, and its release frees it (release_rest).
  const std::string lease_id = "h-" + detail::random_lease_id();
  const std::string waiter_id = found->at(0, "waiter_id").value_or("");
  // any_holds: no live lease here shares the row (checked above), so its other holds, if any,
  // are ghosts (acquires whose reply was lost, the re-entered hold of a hand-off this owner was
  // given), which would otherwise keep the key from moving.
  const std::vector<detail::Arg> args = hand_over_args(
      q, {to, lease_id, found->int64_at(0, "ttl_ms"), found->int64_at(0, "lock_delay_ms"),
          metadata ? Value(*metadata) : Value(), waiter_id, true});
  // A retry after a lost connection finds the row carrying the made-up lease id: the same token.
  const std::optional<Result> r = run(&Statements::hand_over, args, true, nullptr, kUpdateSetsId);
  if (!r || (!rows && r->affected_rows() != 1)) return std::nullopt;
  const std::optional<std::int64_t> token = detail::returned_id(*r, rows, "fencing_token");
  if (!token) return std::nullopt;
  // The candidate waits asleep for a release to wake it (or polls, where none does).
  try {
    const std::vector<detail::Arg> wake = {{"key", Value(q.key)}, {"channel", Value(channel)}};
    (void)run(&Statements::wake, wake, true);
  } catch (const Error&) {
    // It is the candidate's all the same; it finds the key at its next try.
  }
  return detail::HandedOff{to.thread, *token};
}

}  // namespace dblock
