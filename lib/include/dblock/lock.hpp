// SPDX-License-Identifier: Apache-2.0
/// @file
/// The one interface every lock strategy implements (Lock), the lease handle it returns (Lease),
/// and with_lock(), which runs a critical section under a lock and releases it on every path.
/// Expected outcomes are values: try_acquire/acquire return an empty optional when someone else
/// holds the key or the wait timed out. Faults (database unreachable, table missing, bad key) are
/// dblock::Error exceptions. A lease belongs to the process that acquired it: a forked child has
/// an identity of its own, its copies of the parent's leases report lost() and send nothing when
/// released or destroyed, and it uses connections of its own.
///
/// @code
///   dblock::UniqueKeyLock locks(*pool);                      // a strategy (unique_key_lock.hpp)
///   if (auto lease = locks.try_acquire("asset:42")) {        // one round trip
///     transfer(lease->fencing_token());                      // pass the token to your writes
///   }                                                        // released here
/// @endcode
///
/// Thread-safety: a Lock may be used from many threads at once. A Lease is used by one thread at
/// a time (it may move between threads); the background renewer touches it safely.
///
/// Explained in docs/concepts.md (leases, lost(), fencing tokens, owners, fork()), docs/errors.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "dblock/backoff.hpp"
#include "dblock/connection.hpp"
#include "dblock/error.hpp"
#include "dblock/export.hpp"
#include "dblock/owner.hpp"
#include "dblock/release_outcome.hpp"

namespace dblock {

class Observer;  // dblock/observer.hpp

namespace detail {
class LeaseCore;    // strategy-specific state shared by a Lease and the renewer
class LeaseAccess;  // what dblock's own code reads of a Lease
}  // namespace detail

struct LockOptions {
  /// How long the lease lasts without renewal, measured on the database clock.
  /// 1 ms to 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);
  /// The least time the key stays taken, from the acquisition, on the database clock: a release
  /// sooner leaves the key taken, by no one (nobody can re-enter or renew it), until then. For a
  /// job run on a schedule by several hosts whose clocks or cron start times differ: a job that
  /// finishes in 0.3 s is not run again by a host that fires 0.5 s later (ShedLock calls this
  /// lockAtLeastFor). 0 (default): a release frees the key at once. A holder that dies frees the
  /// key at its TTL as always. 0 to 365 days; unique-key locks (lock sets of them) and semaphore
  /// permits only: the other strategies refuse it (Error kInvalidArgument).
  std::chrono::milliseconds min_hold{0};
  /// Lock-delay: how long the key stays taken after this lease ended without a release (it
  /// expired: the holder crashed, hung, was paused or cut off), on the database clock. No other
  /// owner gets the key before TTL + lock_delay has passed since the holder's latest acquire or
  /// renewal, so writes a paused holder still had in flight to a resource that cannot check
  /// fencing tokens drain before a new holder starts (Chubby's lock-delay, Consul's LockDelay).
  /// The holder's own view does not change: lost(), on_lost and the renewer still count the TTL
  /// alone. A release before the TTL ran out frees the key at once (or at acquisition +
  /// min_hold), as does an operator's `dblock release --force`; a release sent after the TTL ran
  /// out leaves the delay running. The price: a crashed holder's key is unavailable for TTL +
  /// lock_delay. `dblock locks` shows the row's expiry with the delay included. 0 (default): no
  /// delay. Explained in docs/locks/lock-delay.md.
  /// 0 to 1 hour; unique-key locks (lock sets of them), semaphore permits and reader-writer
  /// leases only: the other strategies refuse it (Error kInvalidArgument).
  ///
  /// @code
  ///   dblock::LockOptions o;
  ///   o.ttl = std::chrono::seconds(10);
  ///   o.lock_delay = std::chrono::seconds(5);  // a crashed holder's key is free after 15 s
  /// @endcode
  std::chrono::milliseconds lock_delay{0};
  /// Who holds it. Default: the calling thread (Owner::current_thread()).
  std::optional<Owner> owner{};
  /// Stored with the lock row and shown by `dblock locks`: one JSON value as text, such as
  /// R"({"job":"nightly"})"; empty for none. Checked before anything is sent: text that is not
  /// JSON (or that a supported server would refuse) throws Error(kInvalidArgument). With
  /// nlohmann::json, dblock/json.hpp's metadata_text() makes the text. Strategies that keep no
  /// row (row, optimistic and session locks) ignore it.
  std::string metadata{};
  /// Renew in the background at a third of the TTL until released. A renewal that finds the
  /// lease gone marks it lost and calls on_lost.
  bool auto_renew = true;
  /// Called (from the renewer's or its watchdog's thread) when the lease is found lost, at the
  /// latest when a TTL has passed since the last successful renewal was sent. Must not block long.
  std::function<void(const std::string& key)> on_lost{};
  /// How long before the lease could expire unrenewed its stop token (Lease::stop_token) is
  /// requested: the stop comes at the latest successful acquire or renewal sent + TTL - margin
  /// (on this process's CLOCK_BOOTTIME), so work watching the token has the margin to stop
  /// before the database could grant the key to another owner. Default (nullopt): a third of the
  /// TTL, which with auto_renew is two failed renewal periods. 0 to less than the TTL; leases that
  /// expire (unique-key, semaphore, reader-writer) only: the other strategies refuse it (Error
  /// kInvalidArgument). Explained in docs/locks/cancellation.md.
  std::optional<std::chrono::milliseconds> stop_margin{};
  /// Renewal gated on progress: asked (on a renewer thread) before each background renewal; while
  /// it returns false (or throws) the lease is not renewed, so it runs out at its TTL, its stop
  /// token is requested at TTL - stop_margin and another owner may take the key: a worker stuck
  /// in a live process gives the key up instead of keeping it for ever. Empty (default): always
  /// renew. Must not block. An explicit Lease::renew() is not gated. Needs auto_renew; leases that
  /// expire only, like stop_margin. docs/locks/cancellation.md shows a heartbeat made with it.
  std::function<bool()> renew_if{};
  /// Events of this acquisition and of its lease (dblock/observer.hpp), in addition to the
  /// process-wide observer (set_observer). nullptr (default): none of its own.
  std::shared_ptr<Observer> observer{};
};

/// A held lock. Move-only; releasing on destruction, never throwing from the destructor.
/// Destroying a transactional strategy's lease without release() rolls its transaction back
/// (the exception path of a critical section); only release() commits.
class DBLOCK_EXPORT Lease {
 public:
  Lease() noexcept;
  explicit Lease(std::shared_ptr<detail::LeaseCore> core) noexcept;
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;  ///< releases what this held first
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  /// True until release() (or a move) empties the handle. A lost lease is still a handle: ask
  /// lost().
  bool valid() const noexcept;
  explicit operator bool() const noexcept { return valid(); }

  const std::string& key() const;
  /// Strictly increasing per key over every acquisition (reentrant acquisitions share one).
  /// Pass it to the writes the lock protects and have them reject smaller tokens.
  std::int64_t fencing_token() const;
  /// The random id of this acquisition.
  const std::string& lease_id() const;
  const Owner& owner() const;
  /// True once dblock found the lease gone (a renewal or release matched no row of ours), or
  /// once a whole TTL has passed since the latest successful acquire or renewal was sent (by this
  /// process's CLOCK_BOOTTIME, which keeps counting through a system suspend): the database may
  /// have expired the lease by then, even if a renewal is still stuck on a connection that
  /// stopped answering. Never false while the database would grant the key to another owner (no
  /// statement moves the key's expiry earlier than a live hold's). Transactional leases (row lock,
  /// optimistic) have no TTL: they are lost once their connection broke, the server closed their
  /// session, or the server ended their transaction (a deadlock, an implicit commit).
  bool lost() const noexcept;

  /// Gives the hold back (owner- and token-checked in one statement). Empties the handle.
  /// Transactional strategies commit the lease's transaction here: kReleased means the critical
  /// section's writes are committed; kConflict (optimistic) means they were rolled back.
  /// A unique-key release whose connection is lost on the way is retried once; the retry
  /// recognises an attempt the server already applied, so a hold is never given back twice.
  /// Throws dblock::Error on faults that remain (a unique-key lease then expires by its TTL, or
  /// sooner: the owner's next acquire of the key sends the release again first). A transactional
  /// lease throws kLeaseLost when its transaction ended before the commit (the server rolled the
  /// writes back) and kCommitInDoubt when the commit's outcome is unknown (the connection broke
  /// while the COMMIT was on its way, or, on PostgreSQL, its wait for a synchronous standby was
  /// cancelled).
  ReleaseOutcome release();
  /// Extends the lease to `ttl` from now on the database clock; never ends it earlier than it
  /// would have ended (the key's row is shared by every reentrant hold of the owner, and another
  /// may rely on a later expiry). lost() counts `ttl` from now. Returns false and marks the lease
  /// lost when it is no longer held. Throws Error(kInvalidArgument) unless 1 ms <= ttl <= 365
  /// days, before sending anything.
  bool renew(std::chrono::milliseconds ttl);
  bool renew();  ///< with the TTL it was acquired with

  /// Cancellation: a token whose stop is requested when the work under this lease must stop, so
  /// it can stop before the database could grant the key to another owner. Requested, on the
  /// first of:
  ///   - the lease is found lost (as lost() and on_lost, which it precedes);
  ///   - its stop deadline passes: the latest successful acquire or renewal sent + TTL -
  ///     LockOptions::stop_margin, whether a renewal is stuck, failing or not wanted (renew_if),
  ///     or auto_renew is off;
  ///   - a session lock's session is seen ended (looked at every 250 ms);
  ///   - the lease is released, dropped or moved over.
  /// Row-lock and optimistic leases have no TTL and are not watched: their token is requested
  /// when lost() finds their transaction gone, and at release; their statements, which run on the
  /// lease's own connection, fail once the lock is gone. Stop callbacks run on the thread that
  /// requests the stop (the renewer's watchdog, or the releasing thread) and must not block.
  /// The first call arms the watching; a lease whose token nobody takes costs nothing more. In a
  /// forked child, a token already stopped. Throws Error(kInvalidArgument) for an empty handle.
  std::stop_token stop_token() const;

  /// For transactional strategies: the connection (and open transaction) the critical section
  /// must use. nullptr for the unique-key strategy, which holds no transaction.
  Connection* connection() const;

 private:
  friend class detail::LeaseAccess;
  std::shared_ptr<detail::LeaseCore> core_;
};

/// How with_lock retries a critical section that lost a race it could not see coming: an
/// optimistic commit that found the version moved (ReleaseOutcome::kConflict), or a deadlock or
/// serialization failure thrown from inside the critical section. Waits between attempts follow
/// `backoff` (full jitter).
struct RetryPolicy {
  int max_attempts = 1;  ///< 1: no retry
  BackoffPolicy backoff{};
};

/// What with_lock did: how many times it acquired the lock and ran fn, and how many of those
/// runs ended in a conflict (rolled back and, while attempts were left, retried).
struct LockAttempts {
  int attempts = 0;
  int conflicts = 0;
};

/// The interface of every lock strategy.
class DBLOCK_EXPORT Lock {
 public:
  virtual ~Lock() = default;

  /// How with_lock retries on conflict. Only the optimistic strategy retries by default.
  virtual RetryPolicy retry_policy() const { return {}; }

  /// One attempt: a lease, or nothing if another owner holds the key.
  virtual std::optional<Lease> try_acquire(std::string_view key,
                                           const LockOptions& options = {}) = 0;
  /// Waits up to `timeout` (bounded by backoff with jitter, or notification where available).
  virtual std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                                       const LockOptions& options = {}) = 0;
  /// Waits without a limit.
  std::optional<Lease> acquire(std::string_view key, const LockOptions& options = {}) {
    return acquire(key, std::chrono::milliseconds::max(), options);
  }

  /// A waiter's registration for releases of one key (watch_releases).
  class ReleaseWatch {
   public:
    virtual ~ReleaseWatch() = default;
    /// After a try that found the key taken: the next release may call `wake` again.
    virtual void rearm() = 0;
  };
  /// For waiters that do not sleep in acquire() (AsyncLock): until the returned watch is
  /// destroyed, a release of `key` that would wake a waiter asleep in acquire() may call `wake`
  /// instead, once per rearm(). `wake` runs on the lock's listening thread or on a releasing
  /// thread, with a mutex of the lock's held: it must only schedule the waiter's next try.
  /// nullptr where this lock hears no releases (the default): such a waiter polls.
  virtual std::unique_ptr<ReleaseWatch> watch_releases(std::string_view key,
                                                       std::function<void()> wake) {
    (void)key;
    (void)wake;
    return nullptr;
  }
};

namespace detail {
// True for the errors with_lock treats as a conflict: deadlock, serialization failure.
DBLOCK_EXPORT bool is_conflict_error(const Error& e) noexcept;
// Sleeps the next backoff step between with_lock attempts.
DBLOCK_EXPORT void pause_before_retry(Backoff& backoff);
// The Error(kLeaseLost) with_lock throws when the release found the lease gone.
[[noreturn]] DBLOCK_EXPORT void throw_lease_lost(const std::string& key);

// How with_lock and with_locks call a critical section fn on what they hold (a Lease, a
// LeaseSet): fn(held, held.stop_token()) when fn takes the stop token, else fn(held).
template <class Fn, class Held>
struct CriticalSection {
  static constexpr bool kTakesStopToken = std::is_invocable_v<Fn&, Held&, std::stop_token>;
  static decltype(auto) run(Fn& fn, Held& held) {
    if constexpr (kTakesStopToken) {
      return fn(held, held.stop_token());
    } else {
      return fn(held);
    }
  }
  using Result = decltype(run(std::declval<Fn&>(), std::declval<Held&>()));
};
}  // namespace detail

/// Runs fn(lease) under the lock and releases it on every path (return or exception): release()
/// after fn returns (a transactional strategy commits), the lease's destructor when fn throws (a
/// transactional strategy rolls back). Returns nothing when the lock was not obtained within
/// `timeout`, or when every attempt the lock's retry_policy() allows ended in a conflict;
/// otherwise fn's result (true for a void fn), and only when the lease was held for the whole
/// call: when the lease reports lost() once fn returns (its TTL ran out without a renewal, its
/// connection broke), or the release finds it gone (ReleaseOutcome::kNotHeld: it expired or was
/// taken over while fn ran), the lease is given back and with_lock throws Error(kLeaseLost)
/// instead of returning fn's result, so a critical section that ran unprotected is never
/// reported as done under the lock. fn may run more than once: on a conflict its
/// transaction is rolled back and it runs again, so side effects outside the lease's transaction
/// must be idempotent. fn may take the lease's stop token as a second argument,
/// fn(Lease&, std::stop_token) (Lease::stop_token): a long critical section then stops when the
/// lease is about to run out or was lost. `attempts`, when given, receives what happened.
template <class Fn>
auto with_lock(Lock& lock, std::string_view key, std::chrono::milliseconds timeout,
               const LockOptions& options, Fn&& fn, LockAttempts* attempts = nullptr) {
  using R = typename detail::CriticalSection<Fn, Lease>::Result;
  using Out = std::conditional_t<std::is_void_v<R>, bool, R>;
  const RetryPolicy policy = lock.retry_policy();
  Backoff backoff(policy.backoff);
  LockAttempts local;
  LockAttempts& seen = attempts != nullptr ? *attempts : local;
  seen = {};
  for (;;) {
    std::optional<Lease> lease = lock.acquire(key, timeout, options);
    if (!lease) return std::optional<Out>();
    ++seen.attempts;
    try {
      std::optional<Out> out;
      if constexpr (std::is_void_v<R>) {
        detail::CriticalSection<Fn, Lease>::run(fn, *lease);
        out.emplace(true);
      } else {
        out.emplace(detail::CriticalSection<Fn, Lease>::run(fn, *lease));
      }
      const std::string lease_key = lease->key();
      const bool lost = lease->lost();  // given back all the same
      const ReleaseOutcome outcome = lease->release();
      if (lost || outcome == ReleaseOutcome::kNotHeld) detail::throw_lease_lost(lease_key);
      if (outcome != ReleaseOutcome::kConflict) return out;
    } catch (const Error& e) {
      if (!detail::is_conflict_error(e) || seen.attempts >= policy.max_attempts) throw;
    }
    lease.reset();  // a conflicted transaction is rolled back before the pause
    ++seen.conflicts;
    if (seen.attempts >= policy.max_attempts) return std::optional<Out>();
    detail::pause_before_retry(backoff);
  }
}

/// Throws Error(kInvalidArgument) unless `key` is 1 to 255 characters of valid UTF-8 without NUL:
/// the keys every strategy accepts.
DBLOCK_EXPORT void validate_lock_key(std::string_view key);

}  // namespace dblock
