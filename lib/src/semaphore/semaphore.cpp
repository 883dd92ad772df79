// SPDX-License-Identifier: Apache-2.0
#include "dblock/semaphore.hpp"

#include <algorithm>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "lease_core.hpp"
#include "metadata.hpp"
#include "observed_acquire.hpp"
#include "random.hpp"
#include "retry_until.hpp"
#include "semaphore/permits.hpp"
#include "sql/by_server.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"
#include "unique_key/release_listener.hpp"

namespace dblock {

namespace {

using std::chrono::milliseconds;

// A permit's token is slot + 1024 x (clock in µs, raised per slot): see SemaphoreSql.
constexpr std::int64_t kSlots = 1024;
static_assert(Semaphore::kMaxPermits <= kSlots);

struct Statements {
  detail::Statement acquire, slots, acquire_slot, define, set_limit, release, renew, fence;
  detail::Statement fence_exclusive, live_in_shared, live_in_exclusive;  // reader-writer locks
  detail::Statement loss;  // why a permit was found gone
};

// What one attempt at a permit found.
struct Attempt {
  std::optional<std::int64_t> limit;  // the key's stored limit; none stored yet when empty
  std::int64_t free = 0;              // free slots seen
  std::optional<std::int64_t> token;  // the permit's, when one was taken
};

}  // namespace

// The release listener of a lock object's permits (PostgreSQL with notify), started at the first
// wait; shared by a ReadWriteLock's reader and writer. A forked child's copy is left alone (see
// release_listener.hpp): its waiters poll.
struct detail::PermitListener {
  PermitListener(ConnectionSource& source, std::string channel)
      : listener(std::make_unique<detail::ReleaseListener>(source, std::move(channel), true)) {}
  ~PermitListener() {
    if (listener->made_elsewhere()) (void)listener.release();
  }
  PermitListener(const PermitListener&) = delete;
  PermitListener& operator=(const PermitListener&) = delete;
  detail::ReleaseListener* get() {
    if (listener->made_elsewhere()) return nullptr;
    std::call_once(started, [&] { listener->start(); });
    return listener.get();
  }

  std::unique_ptr<detail::ReleaseListener> listener;
  std::once_flag started;
};

struct detail::SemaphoreCore {
  SemaphoreCore(ConnectionSource& src, detail::PermitSlots range, SemaphoreOptions opts,
                const SemaphoreCore* listen_with)
      : source(src),
        permits(range.limit),
        slots(range),
        options(std::move(opts)),
        channel(options.tables.name("semaphore_permits")),
        statements(src.dialect(), [&](const detail::ServerSql& server) {
          const detail::SemaphoreSql& sql = server.semaphore;
          const Dialect d = src.dialect();
          const TableNames& t = options.tables;
          return Statements{detail::Statement(sql.acquire, d, t),
                            detail::Statement(sql.slots, d, t),
                            detail::Statement(sql.acquire_slot, d, t),
                            detail::Statement(sql.define, d, t),
                            detail::Statement(sql.set_limit, d, t),
                            detail::Statement(sql.release, d, t),
                            detail::Statement(sql.renew, d, t),
                            detail::Statement(sql.fence, d, t),
                            detail::Statement(sql.fence_exclusive, d, t),
                            detail::Statement(sql.live_in_shared, d, t),
                            detail::Statement(sql.live_in_exclusive, d, t),
                            detail::Statement(sql.loss, d, t)};
        }) {
    if (listen_with != nullptr) {
      listener = listen_with->listener;
    } else if (options.notify && source.dialect() == Dialect::kPostgreSQL) {
      listener = std::make_shared<detail::PermitListener>(source, channel);
    }
  }

  // Runs `fn(conn, statements)` with run_pooled's retries (ttl_lease.hpp): nullopt when it kept
  // contending. Every statement here is safe to send again (see SemaphoreSql).
  template <class Fn>
  auto run(Fn&& fn, detail::LeaseCore* renewing = nullptr) {
    return detail::run_pooled(
        source, options.contention_retries, true, renewing,
        [&](Connection& conn) { return fn(conn, statements[conn.server()]); });
  }

  // One attempt at a permit for `info` (key, lease id, owner).
  std::optional<Attempt> take(const detail::LeaseInfo& info, const LockOptions& lock) {
    const std::vector<detail::Arg> base = detail::owner_args(
        info.owner, {{"key", Value(info.key)},
                     {"permits", Value(static_cast<std::int64_t>(permits))},
                     {"lease_id", Value(info.lease_id)},
                     {"ttl_ms", Value(static_cast<std::int64_t>(lock.ttl.count()))},
                     {"lock_delay_ms", Value(static_cast<std::int64_t>(info.lock_delay.count()))},
                     {"metadata", detail::metadata_param(lock.metadata)},
                     {"first", Value(static_cast<std::int64_t>(slots.first))},
                     {"last", Value(static_cast<std::int64_t>(slots.last))},
                     {"blocked_by", Value(static_cast<std::int64_t>(slots.blocked_by))}});
    return run([&](Connection& conn, const Statements& st) {
      Attempt out;
      if (!st.acquire.empty()) {  // the server picks the slot (PostgreSQL)
        const Result r = conn.execute(st.acquire.sql(), st.acquire.bind(base));
        if (r.at(0, "permits")) out.limit = r.int64_at(0, "permits");
        out.free = r.int64_at(0, "free");
        if (r.at(0, "fencing_token")) out.token = r.int64_at(0, "fencing_token");
        return out;
      }
      // The slots first, then the upsert of one of them (MySQL).
      const Result r = conn.execute(st.slots.sql(), st.slots.bind(base));
      std::vector<bool> taken(static_cast<std::size_t>(permits), false);
      std::optional<std::int64_t> mine;
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::string kind = r.at(i, "kind").value_or("");
        const std::int64_t n = r.int64_at(i, "n");
        if (kind == "limit") {
          out.limit = n;
        } else if (kind == "mine") {
          mine = n;
        } else if (n >= 0 && n < permits) {
          taken[static_cast<std::size_t>(n)] = true;
        }
      }
      if (out.limit != permits) return out;
      std::vector<std::int64_t> free;
      const bool blocked =
          slots.blocked_by >= 0 && taken[static_cast<std::size_t>(slots.blocked_by)];
      for (int s = slots.first; !blocked && s <= std::min(slots.last, permits - 1); ++s) {
        if (!taken[static_cast<std::size_t>(s)]) free.push_back(s);
      }
      out.free = static_cast<std::int64_t>(free.size());
      if (!mine && free.empty()) return out;
      const std::int64_t slot = mine ? *mine
                                     : free[std::uniform_int_distribution<std::size_t>(
                                           0, free.size() - 1)(detail::jitter_generator())];
      std::vector<detail::Arg> args = base;
      args.push_back({"slot", Value(slot)});
      out.token = detail::returned_id(
          conn.execute(st.acquire_slot.sql(), st.acquire_slot.bind(args)), false, "");
      return out;
    });
  }

  // Stores the limit (`replace`: whatever was stored; else only where none is).
  void store_limit(const std::string& key, bool replace) {
    const detail::Arg args[] = {{"key", Value(key)},
                                {"permits", Value(static_cast<std::int64_t>(permits))}};
    auto done = run([&](Connection& conn, const Statements& st) {
      const detail::Statement& s = replace ? st.set_limit : st.define;
      conn.execute(s.sql(), s.bind(args));
      return true;
    });
    if (!done)
      throw detail::kept_contending("storing the limit of semaphore '" + key + "'", "try again");
  }

  // Live permits of `key` in slots `first` to `last`, their rows locked as `locks` says.
  std::int64_t live_in(const std::string& key, int first, int last, detail::RowLocks locks) {
    const detail::Arg args[] = {{"key", Value(key)},
                                {"first", Value(static_cast<std::int64_t>(first))},
                                {"last", Value(static_cast<std::int64_t>(last))}};
    auto n = run([&](Connection& conn, const Statements& st) {
      const detail::Statement& s =
          locks == detail::RowLocks::kShared ? st.live_in_shared : st.live_in_exclusive;
      return conn.execute(s.sql(), s.bind(args)).int64_at(0, "n");
    });
    if (!n) throw detail::kept_contending("counting the holders of '" + key + "'", "try again");
    return *n;
  }

  ConnectionSource& source;
  int permits;  // the key's limit
  detail::PermitSlots slots;
  SemaphoreOptions options;
  std::string channel;                               // what releases NOTIFY (PostgreSQL)
  std::shared_ptr<detail::PermitListener> listener;  // none: waiters poll
  detail::ByServer<Statements> statements;
  detail::GaleraCheck galera;  // fence() refuses a Galera node
};

namespace {

class Permit final : public detail::LeaseCore {
 public:
  Permit(std::shared_ptr<detail::SemaphoreCore> impl, detail::LeaseInfo info,
         std::function<void(const std::string&)> on_lost, std::chrono::milliseconds min_hold)
      : LeaseCore(std::move(info), std::move(on_lost)),
        impl_(std::move(impl)),
        min_hold_ms_(min_hold.count()) {}

  void fence(Connection& conn) override {
    // A reader-writer lock's writer locks its slot 0 exclusively: a reader's admission reads that
    // row with a share lock (ReadWriteLock), so it waits for this transaction. A reader's share
    // lock on its own slot holds back the writer's look at the reader slots likewise.
    const bool writer = impl_->slots.read_write && info().fencing_token % kSlots == 0;
    detail::send_fence(conn, impl_->statements,
                       writer ? &Statements::fence_exclusive : &Statements::fence,
                       impl_->source.dialect(), impl_->galera, args(), info().key);
  }

 protected:
  std::vector<detail::Arg> args() const {
    const auto& i = info();
    return detail::owner_args(
        i.owner, {{"key", Value(i.key)},
                  {"slot", Value(i.fencing_token % kSlots)},
                  {"token", Value(i.fencing_token)},
                  {"lease_id", Value(i.lease_id)},
                  {"lock_delay_ms", Value(static_cast<std::int64_t>(i.lock_delay.count()))}});
  }

  ReleaseOutcome do_release() override {
    std::vector<detail::Arg> a = args();
    // The same id on a retry: the statement recognises the row its first attempt freed.
    a.push_back({"release_id", Value("r-" + detail::random_lease_id())});
    a.push_back({"min_hold_ms", Value(min_hold_ms_)});
    // Waiters listen where the lock objects on the table say notify (all alike).
    a.push_back({"channel", Value(impl_->options.notify ? impl_->channel : std::string())});
    auto matched = impl_->run([&](Connection& conn, const Statements& st) {
      return conn.execute(st.release.sql(), st.release.bind(a)).affected_rows();
    });
    if (!matched) {
      throw detail::kept_contending("release of a permit of '" + info().key + "'",
                                    "the permit ends by its TTL");
    }
    return *matched == 1 ? ReleaseOutcome::kReleased : ReleaseOutcome::kNotHeld;
  }

  bool do_renew(milliseconds ttl) override {
    std::vector<detail::Arg> a = args();
    a.push_back({"ttl_ms", Value(static_cast<std::int64_t>(ttl.count()))});
    auto matched = impl_->run(
        [&](Connection& conn, const Statements& st) {
          return conn.execute(st.renew.sql(), st.renew.bind(a)).affected_rows();
        },
        this);
    if (!matched)
      throw detail::kept_contending("renewal of a permit of '" + info().key + "'",
                                    "the permit ends by its TTL unless a renewal gets through");
    return *matched == 1;
  }

  // One read of the permit's slot and of the slots whose holders its hold excluded, asked only
  // when observed: a live later permit there took it over (its slot, or, for a reader-writer
  // lock, the key: a writer is taken over by readers let in, a reader by a writer); its own row
  // still there, not released, means it expired on the server; neither: an operator's forced
  // release or the cleaner removed it (docs/operations/monitoring.md).
  LossReason why_not_held() noexcept override {
    try {
      const auto& i = info();
      const std::int64_t slot = i.fencing_token % kSlots;
      // The slots beside its own: none for a semaphore's permit (an empty range).
      std::int64_t first = 1, last = 0;
      if (impl_->slots.read_write && slot == 0) {
        last = Semaphore::kMaxPermits;  // a writer: every reader slot, as its drain counts them
      } else if (impl_->slots.read_write) {
        first = last = 0;  // a reader: the writer's slot
      }
      const detail::Arg a[] = {{"key", Value(i.key)},
                               {"slot", Value(slot)},
                               {"token", Value(i.fencing_token)},
                               {"lease_id", Value(i.lease_id)},
                               {"first", Value(first)},
                               {"last", Value(last)}};
      const auto seen = impl_->run([&](Connection& conn, const Statements& st) {
        const Result r = conn.execute(st.loss.sql(), st.loss.bind(a));
        return std::pair{r.int64_at(0, "taken"), r.int64_at(0, "mine")};
      });
      if (!seen) return LossReason::kGone;  // contended throughout: the cause stays unknown
      if (seen->first > 0) return LossReason::kTakenOver;
      return seen->second > 0 ? LossReason::kExpired : LossReason::kRemoved;
    } catch (...) {
      return LossReason::kGone;  // the read failed: the loss stands, its cause unknown
    }
  }

 private:
  std::shared_ptr<detail::SemaphoreCore> impl_;
  std::int64_t min_hold_ms_;  // LockOptions::min_hold
};

std::optional<Lease> attempt(const std::shared_ptr<detail::SemaphoreCore>& impl,
                             detail::LeaseInfo info, const LockOptions& options) {
  int defined = 0;
  for (int race = 0;; ++race) {
    const auto sent = detail::BootClock::now();  // the permit runs from here at the latest
    const std::optional<Attempt> a = impl->take(info, options);
    if (!a) return std::nullopt;  // contended throughout
    if (!a->limit) {
      // The key's first use (or its limit was cleaned away since: stored again).
      if (++defined > 3) {
        throw Error(
            ErrorCode::kFailedPrecondition,
            "the limit of semaphore '" + info.key +
                "' is deleted as soon as it is stored: is a cleaner running with no grace?");
      }
      impl->store_limit(info.key, false);
      continue;
    }
    if (*a->limit != impl->permits) {
      if (impl->slots.read_write && *a->limit < 2) {
        // No reader-writer lock stores a limit under 2 (one reader and the writer's slot).
        throw Error(ErrorCode::kFailedPrecondition,
                    "key '" + info.key + "' is used by a Semaphore of " +
                        std::to_string(*a->limit) +
                        " permit, not by a ReadWriteLock: a reader-writer lock needs a key of "
                        "its own (a ReadWriteLock with max_readers N stores N + 1 permits)");
      }
      if (impl->slots.read_write) {
        throw Error(ErrorCode::kFailedPrecondition,
                    "reader-writer lock '" + info.key + "' is stored with " +
                        std::to_string(*a->limit - 1) + " readers, and this ReadWriteLock has " +
                        std::to_string(impl->permits - 1) +
                        ": every ReadWriteLock on a key must have the same max_readers; to "
                        "change it, call set_limit on a Semaphore of max_readers + 1 permits");
      }
      throw Error(ErrorCode::kFailedPrecondition,
                  "semaphore '" + info.key + "' is stored with " + std::to_string(*a->limit) +
                      " permits, and this Semaphore has " + std::to_string(impl->permits) +
                      ": every Semaphore on a key must have the same number of permits (a "
                      "ReadWriteLock with max_readers N on the key stores N + 1); to change the "
                      "key's limit, call set_limit on a Semaphore with the new one");
    }
    if (a->token) {
      info.fencing_token = *a->token;
      return detail::start_lease(
          std::make_shared<Permit>(impl, std::move(info), options.on_lost, options.min_hold), sent,
          options);
    }
    // Every permit held, or the slots picked were taken by concurrent acquirers that many times.
    if (a->free == 0 || race >= impl->options.contention_retries) return std::nullopt;
  }
}

void check_permits(int n, int most, std::string_view what) {
  if (n < 1 || n > most) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " needs 1 to " +
                                                 std::to_string(most) + " permits; got " +
                                                 std::to_string(n));
  }
}

}  // namespace

namespace detail {

std::shared_ptr<detail::SemaphoreCore> make_permits(ConnectionSource& source, PermitSlots slots,
                                                    SemaphoreOptions options,
                                                    const detail::SemaphoreCore* listen_with) {
  return std::make_shared<detail::SemaphoreCore>(source, slots, std::move(options), listen_with);
}

struct PermitWait::Impl {
  std::optional<detail::ReleaseListener::Interest> interest;
  detail::ReleaseListener* listener = nullptr;
  std::string key;
};

PermitWait::PermitWait(detail::SemaphoreCore& impl, const std::string& key)
    : impl_(std::make_unique<Impl>()) {
  impl_->key = key;
  if (impl.listener) impl_->listener = impl.listener->get();
  if (impl_->listener) impl_->interest.emplace(*impl_->listener, key);
}

PermitWait::~PermitWait() = default;

void PermitWait::pause(milliseconds d) {
  if (impl_->interest) {
    impl_->interest->wait(d);  // a release's notification ends it early
  } else {
    detail::Clock::system().sleep_for(d);
  }
}

void PermitWait::took() {
  if (impl_->listener) impl_->listener->pass_on(impl_->key);
}

std::optional<Lease> take_permit(const std::shared_ptr<detail::SemaphoreCore>& impl,
                                 std::string_view key, milliseconds timeout,
                                 const LockOptions& options) {
  const detail::LeaseInfo info = detail::new_ttl_lease(key, options, "the permit TTL");
  const bool forever = detail::is_forever_wait(timeout);
  if (timeout == milliseconds(0)) return attempt(impl, info, options);
  Backoff backoff(impl->options.backoff);
  PermitWait wait(*impl, info.key);
  auto got = detail::retry_until(
      detail::Clock::system(), timeout, forever, backoff,
      [&] { return attempt(impl, info, options); }, [&](milliseconds d) { wait.pause(d); });
  if (got) wait.took();
  return got;
}

std::int64_t live_permits(detail::SemaphoreCore& impl, const std::string& key, int first, int last,
                          RowLocks locks) {
  return impl.live_in(key, first, last, locks);
}

void store_limit(detail::SemaphoreCore& impl, std::string_view key) {
  validate_lock_key(key);
  impl.store_limit(std::string(key), true);
}

}  // namespace detail

Semaphore::Semaphore(ConnectionSource& source, int permits, SemaphoreOptions options) {
  check_permits(permits, kMaxPermits, "a semaphore");
  impl_ = detail::make_permits(source, {permits, 0, permits - 1, -1}, std::move(options));
}

Semaphore::~Semaphore() = default;

int Semaphore::permits() const noexcept { return impl_->permits; }

std::optional<Lease> Semaphore::try_acquire(std::string_view key, const LockOptions& options) {
  return detail::observed_acquire("semaphore", key, options, std::nullopt, [&] {
    return detail::take_permit(impl_, key, milliseconds(0), options);
  });
}

std::optional<Lease> Semaphore::acquire(std::string_view key, milliseconds timeout,
                                        const LockOptions& options) {
  return detail::observed_acquire("semaphore", key, options, timeout, [&] {
    return detail::take_permit(impl_, key, timeout, options);
  });
}

void Semaphore::set_limit(std::string_view key) { detail::store_limit(*impl_, key); }

}  // namespace dblock
