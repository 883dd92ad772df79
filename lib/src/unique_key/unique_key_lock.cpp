// SPDX-License-Identifier: Apache-2.0
#include "dblock/unique_key_lock.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "dblock/error.hpp"
#include "lease_core.hpp"
#include "lock_keys.hpp"
#include "metadata.hpp"
#include "renewer.hpp"
#include "retry_until.hpp"
#include "sql/by_server.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "unique_key/live_holds.hpp"
#include "unique_key/pending_releases.hpp"
#include "unique_key/release_listener.hpp"

namespace dblock {

namespace {

using detail::LiveHolds;
using detail::PendingReleases;
using detail::ReleaseRequest;

}  // namespace

struct UniqueKeyLock::Impl : std::enable_shared_from_this<UniqueKeyLock::Impl> {
  // The lock's statements for one server.
  struct Statements {
    detail::Statement acquire, release, release_rest, hand_over, renew, claim;
    detail::Statement fair_check, enqueue, leave;  // fair waiting
  };

  Impl(ConnectionSource& src, UniqueKeyLockOptions opts)
      : source(src),
        options(std::move(opts)),
        dialect(src.dialect()),
        statements(dialect,
                   [&](const detail::ServerSql& server) {
                     const detail::UniqueKeySql& sql = server.unique_key;
                     const bool relaxed = options.relaxed_durability;
                     const bool fair = options.fair;  // else lock_waiters is never read
                     const TableNames& tables = options.tables;
                     return Statements{
                         detail::Statement(sql.acquire, dialect, tables, relaxed, fair),
                         detail::Statement(sql.release, dialect, tables, relaxed, fair),
                         detail::Statement(sql.release_rest, dialect, tables, relaxed, fair),
                         detail::Statement(sql.hand_over, dialect, tables, relaxed, fair),
                         detail::Statement(sql.renew, dialect, tables, relaxed),
                         detail::Statement(sql.claim, dialect, tables),
                         detail::Statement(sql.fair_check, dialect, tables),
                         detail::Statement(sql.enqueue, dialect, tables),
                         detail::Statement(sql.leave, dialect, tables)};
                   }),
        holds_scope(std::string(to_string(dialect)) + '\n' +
                    options.tables.qualified(dialect, "locks") + '\n'),
        rows(detail::server_sql(dialect == Dialect::kPostgreSQL ? Server::kPostgreSQL
                                                                : Server::kMySQL)
                 .unique_key.results_in_rows),
        leaves_queue(detail::server_sql(dialect == Dialect::kPostgreSQL ? Server::kPostgreSQL
                                                                        : Server::kMySQL)
                         .unique_key.acquire_leaves_queue),
        joins_queue(detail::server_sql(dialect == Dialect::kPostgreSQL ? Server::kPostgreSQL
                                                                       : Server::kMySQL)
                        .unique_key.acquire_joins_queue),
        channel(options.tables.name("locks")) {
    if (options.fair && (options.waiter_ttl < std::chrono::milliseconds(300) ||
                         options.waiter_ttl > std::chrono::hours(1))) {
      throw Error(ErrorCode::kInvalidArgument, "waiter_ttl must be from 300 ms to 1 hour; got " +
                                                   std::to_string(options.waiter_ttl.count()) +
                                                   " ms");
    }
    if (options.notify) {
      listener_ = std::make_unique<detail::ReleaseListener>(source, channel,
                                                            dialect == Dialect::kPostgreSQL);
    }
  }
  ~Impl() {
    // A forked child's copy of the listener is left as it is (see release_listener.hpp).
    if (listener_ && listener_->made_elsewhere()) (void)listener_.release();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Runs one lock statement. Contention (deadlock, serialization failure) is retried a few
  // times and then reported as nullopt; a lost connection is retried once when `idempotent`.
  // A renewal passes its lease (`renewing`): its connection's socket is published for a release
  // to cut (LeaseCore::RenewingOn), and nothing is retried once the lease is released.
  // `which` is the statement, bound from `args`, for the server of the connection it runs on; an
  // empty statement (a step that server does not have) is not sent and gives an empty result.
  std::optional<Result> run(detail::Statement Statements::*which, std::span<const detail::Arg> args,
                            bool idempotent, detail::LeaseCore* renewing = nullptr) {
    bool retried_lost = false;
    for (int attempt = 0;; ++attempt) {
      if (renewing != nullptr && renewing->released()) {
        throw Error(ErrorCode::kConnectionLost, "the lease was released during its renewal");
      }
      try {
        PooledConnection conn = source.acquire();
        const detail::Statement& statement = statements[conn->server()].*which;
        if (statement.empty()) return Result();
        const std::vector<Value> params = statement.bind(args);
        if (renewing != nullptr) {
          // Declared after conn, so the socket is withdrawn before the connection goes back.
          detail::LeaseCore::RenewingOn published(*renewing, conn->native_socket());
          return conn->execute(statement.sql(), params);
        }
        return conn->execute(statement.sql(), params);
      } catch (const Error& e) {
        if (detail::is_write_contention(e.code())) {
          if (attempt >= options.contention_retries) return std::nullopt;
          detail::pause_after_contention(attempt);
          continue;
        }
        if (e.code() == ErrorCode::kConnectionLost && idempotent && !retried_lost) {
          retried_lost = true;
          continue;
        }
        throw;
      }
    }
  }

  // The fencing token when acquired, nullopt when held by another owner.
  std::optional<std::int64_t> token_from(const Result& r) const {
    if (rows) {
      if (r.empty()) return std::nullopt;
      return r.int64_at(0, "fencing_token");
    }
    if (r.last_insert_id() == 0) return std::nullopt;
    return static_cast<std::int64_t>(r.last_insert_id());
  }

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
  std::array<detail::Arg, 8> release_args(const ReleaseRequest& q) const {
    return {{{"key", Value(q.key)},
             {"host", Value(q.owner.host)},
             {"process", Value(q.owner.process)},
             {"thread", Value(q.owner.thread)},
             {"token", Value(q.fencing_token)},
             {"channel", Value(channel)},
             {"release_id", Value(q.release_id)},
             {"min_hold_ms", Value(q.min_hold_ms)}}};
  }

  // `head`: the fair queue's head the release reported, when it freed the key.
  ReleaseOutcome send_release(const ReleaseRequest& q, std::string& head) {
    // A retry after a lost connection sends the same release id, which the statement
    // recognises as its own earlier attempt (see the release statement), so it is safe to repeat.
    auto r = run(&Statements::release, release_args(q), true);
    if (!r) {
      throw Error(ErrorCode::kDeadlock,
                  "release of '" + q.key + "' kept meeting deadlocks; the lease ends by its TTL");
    }
    if (r->affected_rows() == 0) return ReleaseOutcome::kNotHeld;
    std::int64_t remaining =
        rows ? r->int64_at(0, "hold_count") : static_cast<std::int64_t>(r->last_insert_id());
    if (rows && options.fair) head = r->at(0, "head").value_or("");
    // Counted now, not when the release was first sent: a release kept after a lost connection
    // may be sent again after the owner acquired the key anew (through any UniqueKeyLock on
    // this table), and that live hold must not be freed by release_rest.
    if (remaining > 0 &&
        LiveHolds::instance().count(live_id(q.key, q.owner, q.fencing_token)) == 0 &&
        release_rest(q)) {
      return ReleaseOutcome::kReleased;
    }
    return remaining == 0 ? ReleaseOutcome::kReleased : ReleaseOutcome::kDecremented;
  }

  // Frees the holds left behind by acquires whose reply was lost (release_rest). True
  // when it did.
  bool release_rest(const ReleaseRequest& q) {
    // Idempotent: frees or not.
    auto r = run(&Statements::release_rest, release_args(q), true);
    return r && r->affected_rows() == 1;
  }

  // Hands the key to a waiter asleep in this lock object (hand_over), if one accepts it and
  // this release would free the key (fair: if it heads the key's queue); true when it did. A
  // release that only drops a hold of several, or whose lease is gone, hands nothing over and
  // leaves it to the plain release.
  bool hand_over(const ReleaseRequest& q, detail::ReleaseListener& listener);
  // Sends a release (and, when it leaves holds no lease here accounts for, release_rest), or,
  // for a lease's own release (`may_hand_over`), a hand-over to a waiter. When the connection
  // fails on the way and on the retry, nobody knows whether the server applied it: it is kept,
  // and the owner's next acquire of the key sends it again first. Else that acquire would
  // re-enter the hold the caller was told is gone and get its old fencing token back (as after a
  // server crash that lost the release).
  ReleaseOutcome release(const ReleaseRequest& q, bool may_hand_over = false);
  // Sends the releases kept for `owner`'s holds of `key`, if any are. Throws (and keeps them)
  // while the server cannot be reached.
  void finish_pending_release(const std::string& key, const Owner& owner);

  detail::ByServer<Statements> statements;
  std::string holds_scope;
  bool rows;          // results come back in rows (else in LAST_INSERT_ID())
  bool leaves_queue;  // an acquire that gets the key deletes the waiter's place
  bool joins_queue;   // a refused acquire can take the waiter's place (join_ttl_ms)
  std::string channel;
  // With notify, from construction on, so that every lease of this lock object is counted
  // (holding) and every release can hand over; it starts listening in listener().
  std::unique_ptr<detail::ReleaseListener> listener_;
  std::once_flag listening_once;
};

bool UniqueKeyLock::Impl::hand_over(const ReleaseRequest& q, detail::ReleaseListener& listener) {
  // Another live lease of this owner here shares the row, so this release only drops a hold.
  if (LiveHolds::instance().count(live_id(q.key, q.owner, q.fencing_token)) > 0) return false;
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
  const detail::Arg args[] = {{"key", Value(q.key)},
                              {"host", Value(q.owner.host)},
                              {"process", Value(q.owner.process)},
                              {"thread", Value(q.owner.thread)},
                              {"token", Value(q.fencing_token)},
                              {"to_lease_id", Value(to.lease_id)},
                              {"to_host", Value(to.owner.host)},
                              {"to_process", Value(to.owner.process)},
                              {"to_thread", Value(to.owner.thread)},
                              {"ttl_ms", Value(static_cast<std::int64_t>(to.ttl.count()))},
                              {"metadata", detail::metadata_param(waiter->metadata())},
                              {"to_waiter_id", Value(waiter->waiter_id())}};
  const auto sent = detail::BootClock::now();  // the waiter's lease runs from here at the latest
  std::optional<Result> r;
  for (bool retried = false;; retried = true) {
    try {
      const detail::Statement& statement = statements[conn->server()].hand_over;
      r = conn->execute(statement.sql(), statement.bind(args));
      break;
    } catch (const Error& e) {
      // Contention: not now; the plain release decides. A lost connection: once more, and a
      // hand-over the server applied is found carrying the waiter's lease id (the same token).
      if (detail::is_write_contention(e.code())) return false;
      if (e.code() != ErrorCode::kConnectionLost || retried) throw;
      conn = source.acquire();
    }
  }
  if (rows ? r->empty() : r->affected_rows() != 1) return false;
  const std::int64_t token =
      rows ? r->int64_at(0, "fencing_token") : static_cast<std::int64_t>(r->last_insert_id());
  // Counted before the waiter wakes: another thread of the waiter's owner that re-enters and
  // releases meanwhile must find this hold live (else release_rest would free the row).
  LiveHolds::instance().add(live_id(q.key, to.owner, token));
  listener.holding(q.key);  // for the waiter's lease, before this release stops holding
  grant = detail::ReleaseListener::Grant{token, sent};
  return true;
}

ReleaseOutcome UniqueKeyLock::Impl::release(const ReleaseRequest& q, bool may_hand_over) {
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
    ReleaseOutcome outcome = send_release(q, head);
    PendingReleases::instance().forget(id, q.release_id);
    if (listener) listener->released(q.key, outcome == ReleaseOutcome::kReleased, head);
    return outcome;
  } catch (const Error& e) {
    if (announced) listener->released(q.key, false, "");
    if (e.code() == ErrorCode::kConnectionLost || e.code() == ErrorCode::kConnectFailed) {
      PendingReleases::instance().keep(id, {shared_from_this(), q});
    }
    throw;
  }
}

void UniqueKeyLock::Impl::finish_pending_release(const std::string& key, const Owner& owner) {
  for (const auto& entry : PendingReleases::instance().find(holds_id(key, owner))) {
    const std::shared_ptr<Impl> sender = entry.lock.lock();
    (sender ? *sender : *this).release(entry.request);
  }
}

namespace {

class UniqueKeyLease final : public detail::LeaseCore {
 public:
  // `handed_over`: the lease came from a hand-over, which told the listener of it (holding).
  UniqueKeyLease(std::shared_ptr<UniqueKeyLock::Impl> impl, detail::LeaseInfo info,
                 std::function<void(const std::string&)> on_lost, bool handed_over,
                 std::chrono::milliseconds min_hold)
      : LeaseCore(std::move(info), std::move(on_lost)),
        min_hold_ms_(min_hold.count()),
        impl_(std::move(impl)),
        listener_(impl_->own_listener()) {
    if (listener_ && !handed_over) listener_->holding(this->info().key);
  }

 protected:
  ReleaseOutcome do_release() override {
    const auto& i = info();
    // This lease is gone from here on, whatever the statement's fate.
    LiveHolds::instance().remove(impl_->live_id(i.key, i.owner, i.fencing_token));
    // Held here until the release is over: it hands the key over or wakes a waiter.
    struct NotHolding {
      detail::ReleaseListener* listener;
      const std::string& key;
      ~NotHolding() {
        if (listener) listener->not_holding(key);
      }
    } not_holding{listener_, i.key};
    // A key kept taken for a least time (min_hold) goes to no waiter before then.
    return impl_->release(
        {i.key, i.owner, i.fencing_token, "r-" + detail::random_lease_id(), min_hold_ms_},
        min_hold_ms_ == 0);
  }

  bool do_renew(std::chrono::milliseconds ttl) override {
    const auto& i = info();
    const detail::Arg args[] = {{"ttl_ms", Value(static_cast<std::int64_t>(ttl.count()))},
                                {"key", Value(i.key)},
                                {"host", Value(i.owner.host)},
                                {"process", Value(i.owner.process)},
                                {"thread", Value(i.owner.thread)},
                                {"token", Value(i.fencing_token)}};
    // Renewing twice is harmless.
    auto r = impl_->run(&UniqueKeyLock::Impl::Statements::renew, args, true, this);
    if (!r) throw Error(ErrorCode::kLockWaitTimeout, "renew of '" + i.key + "' kept contending");
    return r->affected_rows() == 1;
  }

 private:
  std::int64_t min_hold_ms_;
  std::shared_ptr<UniqueKeyLock::Impl> impl_;
  detail::ReleaseListener* listener_;  // told of this lease (holding); nullptr without notify
};

// The lease of `info` (key, lease id, owner), granted `grant.fencing_token` by a statement sent at
// `grant.sent`: an acquire of its own, or a holder's hand-over (`handed_over`).
Lease held(const std::shared_ptr<UniqueKeyLock::Impl>& impl, detail::LeaseInfo info,
           const LockOptions& options, detail::ReleaseListener::Grant grant, bool handed_over) {
  info.fencing_token = grant.fencing_token;
  // A hand-over counted the lease before it woke the waiter.
  if (!handed_over)
    LiveHolds::instance().add(impl->live_id(info.key, info.owner, info.fencing_token));
  auto core = std::make_shared<UniqueKeyLease>(impl, std::move(info), options.on_lost, handed_over,
                                               options.min_hold);
  core->note_renewed(grant.sent, options.ttl);  // lost() counts the TTL from here
  if (options.auto_renew) detail::Renewer::instance().watch(core, grant.sent);
  return Lease(std::move(core));
}

// One try for `info` (key, lease id, owner). `seq`: the waiter's place in the key's fair queue
// (nullopt: not queued; unused unless the lock is fair), `waiter_id` its id. `ahead` is set to
// the number of live waiters queued before it where the queue is read first (MySQL), else left
// alone. With `joined` (a fair lock whose acquire joins the queue, and a waiter not queued yet),
// a refused try takes the waiter's place in the same statement and sets `joined` to it.
std::optional<Lease> attempt(const std::shared_ptr<UniqueKeyLock::Impl>& impl,
                             detail::LeaseInfo info, const LockOptions& options,
                             std::optional<std::int64_t> seq,
                             const std::string* waiter_id = nullptr, std::int64_t* ahead = nullptr,
                             std::optional<std::int64_t>* joined = nullptr) {
  impl->finish_pending_release(info.key, info.owner);
  const bool named = seq || joined != nullptr;  // the statement knows the waiter's id
  const std::int64_t place_ttl_ms = impl->options.waiter_ttl.count();
  const detail::Arg args[] = {{"key", Value(info.key)},
                              {"lease_id", Value(info.lease_id)},
                              {"host", Value(info.owner.host)},
                              {"process", Value(info.owner.process)},
                              {"thread", Value(info.owner.thread)},
                              {"ttl_ms", Value(static_cast<std::int64_t>(options.ttl.count()))},
                              {"metadata", detail::metadata_param(options.metadata)},
                              {"seq", seq ? Value(*seq) : Value()},
                              {"waiter_id", named ? Value(*waiter_id) : Value()},
                              {"join_ttl_ms", joined ? Value(place_ttl_ms) : Value()}};
  if (impl->options.fair) {
    // Where acquire cannot check the queue itself. A read: safe to repeat.
    auto wait = impl->run(&UniqueKeyLock::Impl::Statements::fair_check, args, true);
    if (!wait) return std::nullopt;
    if (!wait->empty()) {
      if (ahead != nullptr) *ahead = wait->int64_at(0, "ahead");
      if (wait->int64_at(0, "wait") != 0) return std::nullopt;
    }
  }
  const auto sent = detail::BootClock::now();  // the lease runs from here at the latest
  // A retry reuses the lease id.
  auto r = impl->run(&UniqueKeyLock::Impl::Statements::acquire, args, true);
  if (!r) return std::nullopt;
  if (joined != nullptr && !r->empty() && r->at(0, "seq")) {
    *joined = r->int64_at(0, "seq");  // refused, and queued
    return std::nullopt;
  }
  auto token = impl->token_from(*r);
  if (!token) return std::nullopt;
  return held(impl, std::move(info), options, {*token, sent}, false);
}

detail::LeaseInfo new_lease(std::string_view key, const LockOptions& options) {
  validate_lock_key(key);
  detail::validate_ttl(options.ttl, "the lock TTL");
  detail::validate_metadata(options.metadata);
  detail::validate_min_hold(options.min_hold);
  return {std::string(key), 0, detail::random_lease_id(),
          options.owner ? *options.owner : Owner::current_thread(), options.ttl};
}

// A fair waiter's place in its key's queue, from its first refused try until it leaves (when
// this object ends: with the key, out of time, or by an error). Registering again (a refresh,
// or a resend after a lost reply) sends the same waiter id, so the waiter keeps one place. A
// statement that may have taken the place and got no answer (its reply lost, say) leaves the
// place in doubt: this object then sends the leave all the same when it ends.
class QueuePlace {
 public:
  QueuePlace(UniqueKeyLock::Impl& impl, const detail::LeaseInfo& info, detail::Clock& clock)
      : impl_(impl), info_(info), clock_(clock), id_("w-" + detail::random_lease_id()) {}
  ~QueuePlace() {
    if (!seq_ && !in_doubt_) return;
    try {
      const detail::Arg args[] = {{"waiter_id", Value(id_)}, {"channel", Value(impl_.channel)}};
      impl_.run(&UniqueKeyLock::Impl::Statements::leave, args, true);
    } catch (const Error&) {
      // The place expires by itself within waiter_ttl.
    }
  }
  QueuePlace(const QueuePlace&) = delete;
  QueuePlace& operator=(const QueuePlace&) = delete;

  const std::string& id() const noexcept { return id_; }
  // The waiter got the key, and the acquire took its place away already (acquire_leaves_queue).
  void left() noexcept { seq_.reset(); }
  // Runs `send`, a statement that may take the place (join(), or an acquire that joins): if it
  // throws, the server may have committed the place all the same.
  template <class Send>
  auto taking(Send&& send) {
    in_doubt_ = true;
    auto answer = send();
    in_doubt_ = false;
    return answer;
  }
  std::optional<std::int64_t> seq() const noexcept { return seq_; }
  // Registered and not yet due for a refresh.
  bool fresh() const { return seq_ && clock_.now() < refreshed_ + impl_.options.waiter_ttl / 3; }
  // Registered at `seq` by a statement sent at `sent` (an acquire that joins the queue).
  void placed(std::int64_t seq, detail::Clock::time_point sent) {
    seq_ = seq;
    refreshed_ = sent;
  }
  // Registers, or refreshes the place.
  void join() {
    const auto sent = clock_.now();
    const detail::Arg args[] = {
        {"key", Value(info_.key)},
        {"waiter_id", Value(id_)},
        {"host", Value(info_.owner.host)},
        {"process", Value(info_.owner.process)},
        {"thread", Value(info_.owner.thread)},
        {"ttl_ms", Value(static_cast<std::int64_t>(impl_.options.waiter_ttl.count()))}};
    auto r =
        taking([&] { return impl_.run(&UniqueKeyLock::Impl::Statements::enqueue, args, true); });
    if (!r) return;  // contended: tried again at the next refresh
    placed(impl_.rows ? r->int64_at(0, "seq") : static_cast<std::int64_t>(r->last_insert_id()),
           sent);
  }

 private:
  UniqueKeyLock::Impl& impl_;
  const detail::LeaseInfo& info_;
  detail::Clock& clock_;
  std::string id_;
  std::optional<std::int64_t> seq_;
  bool in_doubt_ = false;  // a statement that may have taken the place got no answer
  detail::Clock::time_point refreshed_{};
};

}  // namespace

UniqueKeyLock::UniqueKeyLock(ConnectionSource& source, UniqueKeyLockOptions options)
    : impl_(std::make_shared<Impl>(source, std::move(options))) {}

UniqueKeyLock::~UniqueKeyLock() = default;

std::optional<Lease> UniqueKeyLock::try_acquire(std::string_view key, const LockOptions& options) {
  return attempt(impl_, new_lease(key, options), options, std::nullopt);
}

std::optional<Lease> UniqueKeyLock::acquire(std::string_view key, std::chrono::milliseconds timeout,
                                            const LockOptions& options) {
  const detail::LeaseInfo info = new_lease(key, options);
  const bool forever = detail::is_forever_wait(timeout);
  Backoff backoff(impl_->options.backoff);
  detail::ReleaseListener* listener = impl_->listener();
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
  if (!impl_->options.fair) {
    // While asleep, a release made through this lock object may hand the key over.
    if (interest) interest->accept_hand_over(info, options.metadata);
    return detail::retry_until(
        clock, timeout, forever, backoff,
        [&]() -> std::optional<Lease> {
          if (interest) {
            if (auto grant = interest->take_grant()) {
              return held(impl_, info, options, *grant, true);
            }
          }
          return attempt(impl_, info, options, {});
        },
        [&](std::chrono::milliseconds d) {
          if (interest && interest->held_here()) {
            // A lease of this lock object holds the key: its release hands it over or wakes
            // this waiter, so polling at the slowest pace suffices (against a lease that ends
            // by its TTL instead, or a hold taken elsewhere meanwhile).
            d = std::max(
                d, std::min(impl_->options.backoff.max_delay,
                            std::chrono::floor<std::chrono::milliseconds>(deadline - clock.now())));
          }
          pause(d);
        });
  }
  QueuePlace place(*impl_, info, clock);
  std::int64_t ahead = -1;  // waiters before this one, where the queue is read (MySQL)
  const auto join = [&] {
    place.join();
    if (interest && place.seq()) interest->queued_as(place.id(), *place.seq());
  };
  // Once queued and asleep, a release through this lock object hands the key over when this
  // waiter heads the queue.
  if (interest) interest->accept_hand_over(info, options.metadata);
  return detail::retry_until(
      clock, timeout, forever, backoff,
      [&]() -> std::optional<Lease> {
        if (interest) {
          if (auto grant = interest->take_grant()) {
            if (impl_->leaves_queue) place.left();  // the hand-over took the place away
            return held(impl_, info, options, *grant, true);
          }
        }
        if (place.seq() && !place.fresh()) join();
        ahead = -1;
        const bool joining = !place.seq() && (forever || timeout.count() > 0);
        if (joining && impl_->joins_queue) {
          // One statement tries and, refused, takes a place. The place is announced first: a
          // release that names this waiter the head before the reply is back still wakes it.
          if (interest) interest->queued_as(place.id(), std::numeric_limits<std::int64_t>::max());
          const auto sent = clock.now();
          std::optional<std::int64_t> seq;
          auto lease = place.taking([&] {
            return attempt(impl_, info, options, std::nullopt, &place.id(), &ahead, &seq);
          });
          if (seq) {
            place.placed(*seq, sent);
            if (interest) interest->queued_as(place.id(), *seq);
          }
          return lease;  // the acquire that got the key had no place to leave
        }
        auto lease = attempt(impl_, info, options, place.seq(), &place.id(), &ahead);
        if (!lease && joining) {
          join();  // refused: take a place, and try again at once (the key may be free by now)
          lease = attempt(impl_, info, options, place.seq(), &place.id(), &ahead);
        }
        if (lease && impl_->leaves_queue) place.left();
        return lease;
      },
      [&](std::chrono::milliseconds d) {
        const auto place_due = impl_->options.waiter_ttl / 3;  // the place is refreshed in time
        if (interest && (interest->held_here() || interest->heard())) {
          // A lease of this lock object holds the key: its release hands the key to this waiter
          // when it heads the queue, or the head elsewhere is woken. Or this process hears every
          // release: each names the queue's head, and so does a head that leaves a free key.
          // Either way polling slowly suffices (against a lease that ends by its TTL, or a head
          // that died, which no one announces).
          d = std::min(place_due,
                       std::max(d, std::min(impl_->options.backoff.max_delay,
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
          d = std::min(d, impl_->options.backoff.min_sleep *
                              (1 + 2 * std::max<std::int64_t>(0, ahead - kFast + 1)));
        }
        pause(d);
      });
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
  const detail::Arg args[] = {
      {"key", Value(claim.key)},       {"claim_id", Value(claim.claim_id)},
      {"host", Value(owner.host)},     {"process", Value(owner.process)},
      {"thread", Value(owner.thread)}, {"metadata", detail::metadata_param(options.metadata)}};
  auto r = impl_->run(&Impl::Statements::claim, args, true);  // a retry reuses the claim id
  if (!r) return std::nullopt;
  auto token = impl_->token_from(*r);
  if (!token) return std::nullopt;
  claim.fencing_token = *token;
  return claim;
}

}  // namespace dblock
