// SPDX-License-Identifier: Apache-2.0
// The state behind a Lease, shared between the Lease handle and the background renewer, and the
// two operations each strategy supplies (release, renew). Internal.
//
// Thread-safety: the owner's thread and the renewer may call release() and renew() concurrently.
// Releases are serialised with each other and renewals with each other. A release waits for a
// renewal in flight only briefly: one stuck on a connection that stopped answering is cut off
// (the socket the renewal published with RenewingOn is shut down, so its statement fails at
// once), so no renewal outlives the release (the caller may destroy the connection source right
// after it) and none holds it back for long.
//
// Times are read on the lease's Clock: Clock::system() (CLOCK_BOOTTIME, which counts a suspend as
// the database's clock does) unless a test gives it a simulated one.
//
// fork(): a lease belongs to the process that acquired it. In a forked child, the child's copy
// reports lost(), and release(), abandon() and renew() do nothing to the database (nor to the
// lease's mutexes, which a thread of the parent may have held when it forked): the hold is the
// parent's, and a child leaving through the parent's scope must not give it back.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "clock.hpp"
#include "dblock/connection.hpp"
#include "dblock/observer.hpp"
#include "dblock/owner.hpp"
#include "dblock/release_outcome.hpp"
#include "observe.hpp"

namespace dblock::detail {

struct LeaseInfo {
  std::string key;
  std::int64_t fencing_token = 0;
  std::string lease_id;
  Owner owner;
  std::chrono::milliseconds ttl{0};
  // LockOptions::lock_delay: every statement that sets this lease's expiry adds it on the
  // database's side; the lease's own deadline (lost(), the renewer) counts the TTL alone.
  std::chrono::milliseconds lock_delay{0};
  // LockOptions::stop_margin (nullopt: a third of the TTL) and LockOptions::renew_if.
  std::optional<std::chrono::milliseconds> stop_margin{};
  std::function<bool()> renew_if{};
};

class LeaseCore {
 public:
  LeaseCore(LeaseInfo info, std::function<void(const std::string&)> on_lost,
            Clock& clock = Clock::system());
  virtual ~LeaseCore() = default;
  LeaseCore(const LeaseCore&) = delete;
  LeaseCore& operator=(const LeaseCore&) = delete;

  const LeaseInfo& info() const noexcept { return info_; }
  // True once dblock found the lease gone (mark_lost) or its transaction's connection broke.
  // The renewer reads this flag.
  // In a forked child (foreign()), always: the hold is the parent's.
  bool lost() const noexcept { return lost_.load() || foreign() || connection_lost(); }
  // True in a process other than the one that acquired the lease (a forked child).
  bool foreign() const noexcept { return ::getpid() != pid_; }
  // True once a whole TTL has passed since the latest successful acquire or renew was sent:
  // the database has expired the lease by then, whatever became of the statements after it
  // (a renewal stuck on a connection that no longer answers cannot say so itself).
  // Never for a lease without a TTL (expires() false).
  bool out_of_time() const noexcept {
    return expires() && !released() && clock_.now() - renewed_at() >= ttl();
  }
  // Lock-free, so the renewer can ask while a release's round trip holds the lease's mutex.
  bool released() const noexcept { return released_.load(); }
  // The TTL of the latest successful acquire or renew (the renewer renews with it).
  std::chrono::milliseconds ttl() const noexcept {
    return std::chrono::milliseconds(ttl_ms_.load());
  }
  // When the statement behind the latest successful acquire or renew was sent: the lease is
  // valid for ttl() from then at most.
  BootClock::time_point renewed_at() const noexcept {
    return BootClock::time_point(BootClock::duration(renewed_at_.load()));
  }
  void note_renewed(BootClock::time_point sent, std::chrono::milliseconds ttl) noexcept {
    renewed_at_ = sent.time_since_epoch().count();
    ttl_ms_ = ttl.count();
  }

  // Runs the strategy's release once; later calls return kNotHeld without a statement.
  ReleaseOutcome release();
  // release() for destructors: swallows errors (the lease then ends by its TTL).
  void release_quietly() noexcept;
  // Ends the hold without committing (a dropped Lease): do_abandon() once, never throwing.
  void abandon() noexcept;
  // Renews unless released; false (and lost, unless a release ended it meanwhile) when the lease
  // is gone. `background`: the renewer's renewal, not Lease::renew() (for the observers).
  bool renew(std::chrono::milliseconds ttl, bool background = false);
  // Marks the lease lost, requests its stop, tells the observers why and calls on_lost, once.
  void mark_lost(LossReason reason) noexcept;

  // Events (dblock/observer.hpp): from here on the lease reports its renewals, its loss and its
  // end to `observers`, as a lease of `strategy` (a string literal). Called once, by the
  // acquisition that hands the lease out (observe.hpp), before its caller has it.
  void observe(Observers observers, std::string_view strategy) noexcept;

  // Cancellation (Lease::stop_token). The stop is requested when the lease is found lost,
  // released or dropped, and, once armed (a caller took the token), when its stop deadline
  // passes, which the renewer's watchdog watches.
  std::stop_token stop_token() const noexcept { return stop_.get_token(); }
  void request_stop() noexcept { stop_.request_stop(); }
  bool stop_requested() const noexcept { return stop_.stop_requested(); }
  // True the first time only: the caller then has the renewer watch the stop deadline.
  bool arm() noexcept { return !armed_.exchange(true); }
  bool armed() const noexcept { return armed_.load(); }
  // Set by the renewer when it renews this lease in the background (LockOptions::auto_renew).
  void note_watched() noexcept { watched_ = true; }
  bool watched() const noexcept { return watched_.load(); }
  // LockOptions::stop_margin, or a third of the TTL; never more than the TTL.
  std::chrono::milliseconds stop_margin() const noexcept;
  // When the stop is due: the margin before the end of the TTL counted from the latest
  // successful acquire or renew. For leases that expire() only.
  BootClock::time_point stop_at() const noexcept { return renewed_at() + ttl() - stop_margin(); }
  // True once the stop deadline of a lease that expires has passed.
  bool past_stop_at() const noexcept {
    return expires() && !released() && clock_.now() >= stop_at();
  }
  // LockOptions::renew_if's answer (true without one): false skips a background renewal. A
  // callback that throws counts as false.
  bool renewal_wanted() const noexcept;
  // Leases that do not expire() but whose loss can be seen from any thread while the holder
  // runs statements (a session lock's ended session): the watchdog looks at armed ones every
  // kLossPollInterval, so their stop follows the loss without anyone asking lost().
  virtual bool polled_for_loss() const noexcept { return false; }
  static constexpr std::chrono::milliseconds kLossPollInterval{250};

  // Publishes, for its lifetime, the socket a renewal's statement runs on (see release()).
  class RenewingOn {
   public:
    RenewingOn(LeaseCore& lease, int fd) noexcept;
    ~RenewingOn();
    RenewingOn(const RenewingOn&) = delete;
    RenewingOn& operator=(const RenewingOn&) = delete;

   private:
    LeaseCore& lease_;
  };

  // Makes `conn`'s open transaction commit only while this lease is held (dblock/fence.hpp);
  // throws Error(kLeaseLost) when it is not. Default: a lease held by a connection of its own
  // (connection()) is fenced by it when `conn` is that connection; any other is refused.
  virtual void fence(Connection& conn);

  virtual Connection* connection() { return nullptr; }
  // False for leases the database does not expire (a transaction holds them until it ends):
  // for those, time without a renewal says nothing about whether they are still held.
  virtual bool expires() const noexcept { return true; }

 protected:
  virtual ReleaseOutcome do_release() = 0;
  // What a dropped lease does. Default: the same as release, errors swallowed. Transactional
  // strategies roll back instead.
  virtual void do_abandon() noexcept;
  // Transactional strategies: true once the lease's connection broke (the server ended the
  // transaction and with it the lock).
  virtual bool connection_lost() const noexcept { return false; }
  virtual bool do_renew(std::chrono::milliseconds ttl) = 0;
  // A release of a dropped lease failed with `e`: says so to the log hook (and, when observed,
  // to the dropped lease's Released event).
  void log_failed_release(const std::exception& e) noexcept;
  // Why a renewal or release found the lease not held, asked only when observed (it may read the
  // database). Default: kGone.
  virtual LossReason why_not_held() noexcept { return LossReason::kGone; }

 private:
  LeaseInfo info_;
  const pid_t pid_;  // the process that acquired the lease
  std::function<void(const std::string&)> on_lost_;
  Clock& clock_;
  // Waits for a renewal in flight, cutting it off if it does not end soon.
  void stop_renewal() noexcept;
  // The renewal in flight is over (renew() calls it on every path).
  void end_renewing() noexcept;
  // Events: whether observers are set, the lease as events name it, and the reports.
  bool observed() const noexcept { return observed_.load(std::memory_order_acquire); }
  LeaseEvent event() const noexcept;
  std::chrono::nanoseconds held_for() const noexcept { return clock_.now() - acquired_at_; }
  // The events; the callers see to it that each comes once per lease.
  void report_lost(LossReason reason) noexcept;
  // `lost_before`: the lease was lost (or out of time) when its release began.
  void report_released(ReleaseOutcome outcome, bool dropped, std::string_view error,
                       bool lost_before) noexcept;

  std::mutex release_mu_;  // serialises release and abandon
  // Renewals run one at a time: renewing_ is set while one runs, under renewing_mu_, which also
  // guards renewing_fd_; renewal_done_ tells a waiting release or renewal that it ended.
  std::mutex renewing_mu_;
  std::condition_variable renewal_done_;
  bool renewing_ = false;
  int renewing_fd_ = -1;  // the socket of the renewal in flight, or -1
  std::atomic<bool> released_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> armed_{false};
  std::atomic<bool> watched_{false};
  std::stop_source stop_;
  std::atomic<std::int64_t> ttl_ms_;
  std::atomic<BootClock::rep> renewed_at_;
  // Events: set once by observe(), before observed_ (read with acquire ordering).
  BootClock::time_point acquired_at_;
  Observers observers_;
  std::string_view strategy_;
  std::atomic<bool> observed_{false};
  std::string drop_error_;  // what a dropped lease's release threw (under release_mu_)
};

}  // namespace dblock::detail
