// SPDX-License-Identifier: Apache-2.0
/// @file
/// Events: what happens to acquisitions and leases, as structured calls to an Observer, for
/// metrics, traces and audit logs. Install one for the whole process with set_observer(), or for
/// the acquisitions made with some options through LockOptions::observer (give a lock object's
/// callers the same options to observe that lock object alone). Both are called when both are
/// installed: the process-wide one first. A lease reports to the observers that were installed
/// when it was acquired, until it ends, so every lease an observer saw acquired it also sees end.
/// Nothing is measured and no event is made while none is installed.
///
/// @code
///   struct Waits final : dblock::Observer {
///     void acquire_ended(const dblock::AcquireEnded& e) override {
///       if (e.outcome == dblock::AcquireOutcome::kAcquired) histogram.observe(e.waited);
///     }
///   };
///   dblock::set_observer(std::make_shared<Waits>());
/// @endcode
///
/// Which thread calls what: acquire_started and acquire_ended on the thread that called
/// try_acquire or acquire; renewed and renewal_failed on the renewing thread (the renewer's, or
/// the caller's for Lease::renew); lost on the thread that found the loss (the renewer's or its
/// watchdog's for a renewal that found the lease gone or a TTL that ran out; the caller's for a
/// renewal or release that found it gone); released on the thread that released or dropped the
/// lease; waiter_queued and waiter_left on the waiting thread; pool_exhausted on the thread that
/// asked for a connection (told to the process-wide observer, and to an acquisition's own when
/// one was running on that thread); term_began (before the leader's work starts) and term_ended
/// (after the term's lease was released, before ElectionOptions::on_revoked) on the thread that
/// runs Election::campaign. Calls come from several threads at once: an observer must be
/// thread-safe, must not block for long (a renewal waits for it), must not throw (what it throws is
/// dropped) and must not call back into the lease or lock it observes. The views in an event (key,
/// strategy, error) are valid during the call only.
///
/// Explained, with the order of events and what each field means, in
/// docs/operations/monitoring.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "dblock/export.hpp"
#include "dblock/release_outcome.hpp"

namespace dblock {

/// How an acquisition ended.
enum class AcquireOutcome {
  kAcquired,  ///< a lease was returned
  kBusy,      ///< try_acquire (or a zero timeout): another owner holds the key
  kTimedOut,  ///< acquire: the wait ended at its timeout
  kFailed,    ///< an Error was thrown (the database unreachable, a bad key, ...)
};

/// Why a lease was found lost.
enum class LossReason {
  kExpired,       ///< its TTL ran out without a successful renewal (renewals failed, or were not
                  ///< wanted by renew_if, or the process was paused)
  kTakenOver,     ///< a renewal or release found the key held by a later holder (a permit: its
                  ///< slot, or the holders a reader-writer lease kept out; see monitoring.md)
  kRemoved,       ///< a renewal or release found the hold gone and no later holder: an
                  ///< operator's `dblock release --force`, or the cleaner
  kGone,          ///< a renewal or release found the hold gone, and the read that tells why
                  ///< failed (or the strategy does not tell)
  kSessionEnded,  ///< the session or transaction that held it ended (connection lost, server
                  ///< ended it)
};

/// Why an election's term ended (Observer::term_ended, ElectionOptions::on_revoked).
enum class TermEnd {
  kReturned,   ///< the leader's work returned
  kThrew,      ///< the leader's work threw (reported to on_error)
  kLost,       ///< the lease was lost or about to run out (its stop token was requested)
  kStopped,    ///< campaign()'s own stop token was requested
  kHandedOff,  ///< handed to another candidate (Election::hand_off, Term::hand_off)
};

/// The lowercase names used in metrics and logs: "acquired", "busy", "timed_out", "failed";
/// "unknown" for any other value.
DBLOCK_EXPORT std::string_view to_string(AcquireOutcome outcome) noexcept;
/// "expired", "taken_over", "removed", "gone", "session_ended"; "unknown" for any other value.
DBLOCK_EXPORT std::string_view to_string(LossReason reason) noexcept;
/// "returned", "threw", "lost", "stopped", "handed_off"; "unknown" for any other value.
DBLOCK_EXPORT std::string_view to_string(TermEnd why) noexcept;

/// The lease an event is about.
struct LeaseEvent {
  /// "unique_key", "semaphore", "reader", "writer" (a ReadWriteLock's), "row", "optimistic",
  /// "session".
  std::string_view strategy;
  std::string_view key;
  std::int64_t fencing_token = 0;
  std::string_view lease_id;
};

/// An acquisition begins.
struct AcquireStarted {
  std::string_view strategy;
  std::string_view key;
  /// How long it may wait: nullopt for try_acquire, milliseconds::max() for no limit.
  std::optional<std::chrono::milliseconds> timeout;
};

/// An acquisition ended; exactly one per AcquireStarted, on the same thread.
struct AcquireEnded {
  std::string_view strategy;
  std::string_view key;
  std::optional<std::chrono::milliseconds> timeout;  ///< as in AcquireStarted
  AcquireOutcome outcome = AcquireOutcome::kFailed;
  /// From the call to its end (monotonic clock): the wait when acquired after a wait.
  std::chrono::nanoseconds waited{0};
  /// Tries at the key: 1 for an uncontended acquisition; a waiter's tries between waits.
  int attempts = 0;
  /// Statements this call sent on dblock's connections, transaction control included.
  int statements = 0;
  /// kAcquired: the new lease (fencing token, lease id); otherwise a token of 0, no id.
  LeaseEvent lease{};
  /// kFailed: the Error's message.
  std::string_view error{};
};

/// A renewal succeeded.
struct Renewed {
  LeaseEvent lease;
  std::chrono::nanoseconds latency{0};  ///< the renewal's round trip
  std::chrono::milliseconds ttl{0};     ///< the lease now lasts this long from when it was sent
  bool background = false;              ///< by the renewer (auto_renew), not Lease::renew()
};

/// A renewal failed with an error (not a loss: a renewal that finds the lease gone reports lost).
struct RenewalFailed {
  LeaseEvent lease;
  std::string_view error;
  /// How long before the lease counts as lost unless a renewal succeeds (0 or less: it is lost).
  std::chrono::milliseconds time_left{0};
  bool background = false;
};

/// The lease was found lost: at most once per lease, before LockOptions::on_lost is called.
struct LeaseLost {
  LeaseEvent lease;
  LossReason reason = LossReason::kGone;
  /// From its acquisition (when the statement that granted it was sent, on CLOCK_BOOTTIME) to
  /// when the loss was found: at least its TTL when it expired.
  std::chrono::nanoseconds held_for{0};
};

/// The lease ended by release() or by being dropped (destroyed, moved over): once per lease.
struct Released {
  LeaseEvent lease;
  /// From its acquisition (as in LeaseLost) to the end of the release.
  std::chrono::nanoseconds held_for{0};
  /// What release() returned; kNotHeld also when a drop's release found it gone, and when the
  /// release threw (see error).
  ReleaseOutcome outcome = ReleaseOutcome::kReleased;
  bool dropped = false;      ///< destroyed or moved over, not release()d
  std::string_view error{};  ///< what the release threw (or, dropped, swallowed), if it failed
  /// The lease was found lost before or by its release (Lease::lost() was true, or the release
  /// found it gone): the work under it was not protected throughout. with_lock throws
  /// kLeaseLost for such a lease; counting these counts critical sections that ran on after
  /// their lock was gone.
  bool lost = false;
};

/// A fair waiter (UniqueKeyLockOptions::fair) took its place in the key's queue, or left it.
struct WaiterEvent {
  std::string_view strategy;
  std::string_view key;
  std::string_view waiter_id;
  /// Its place number: the queue is served in increasing order.
  std::int64_t place = 0;
  /// waiter_left: it left with the key (else its wait timed out or failed).
  bool got_key = false;
};

/// A connection was asked of a dblock pool that had none to give within its acquire_timeout:
/// the caller got Error(kPoolExhausted).
struct PoolExhausted {
  std::size_t max_size = 0;  ///< PoolOptions::max_size
  std::chrono::milliseconds waited{0};
};

/// A candidate of an election (dblock/election.hpp) began a term (it was elected) or ended one.
/// The term's lease reports as any lease does (strategy "unique_key", the election's name as
/// the key); these say what only the election knows: that the lease is a term, and why it ended.
struct TermEvent {
  std::string_view election;  ///< the election's name
  std::string_view
      candidate;          ///< this candidate's name (ElectionOptions::candidate, or its random one)
  std::int64_t term = 0;  ///< the term number: its lease's fencing token
  /// term_ended: from the election to the release of the term's lease.
  std::chrono::nanoseconds lasted{0};
  /// term_ended: why it ended.
  TermEnd why = TermEnd::kReturned;
  /// term_ended with kHandedOff: the candidate the name went to; empty otherwise.
  std::string_view handed_to{};
};

/// Receives events. Every call has a default that does nothing: override the ones you need.
class DBLOCK_EXPORT Observer {
 public:
  virtual ~Observer();
  virtual void acquire_started(const AcquireStarted& /*event*/) {}
  virtual void acquire_ended(const AcquireEnded& /*event*/) {}
  virtual void renewed(const Renewed& /*event*/) {}
  virtual void renewal_failed(const RenewalFailed& /*event*/) {}
  virtual void lost(const LeaseLost& /*event*/) {}
  virtual void released(const Released& /*event*/) {}
  virtual void waiter_queued(const WaiterEvent& /*event*/) {}
  virtual void waiter_left(const WaiterEvent& /*event*/) {}
  virtual void pool_exhausted(const PoolExhausted& /*event*/) {}
  virtual void term_began(const TermEvent& /*event*/) {}
  virtual void term_ended(const TermEvent& /*event*/) {}
};

/// Installs the process-wide observer, replacing any; nullptr removes it. Leases acquired before
/// keep reporting to the observer that was installed when they were acquired (it is kept alive
/// until they end). Thread-safe.
DBLOCK_EXPORT void set_observer(std::shared_ptr<Observer> observer);

/// The process-wide observer, or nullptr.
DBLOCK_EXPORT std::shared_ptr<Observer> observer();

}  // namespace dblock
