// SPDX-License-Identifier: Apache-2.0
// Wakes waiters when a key is released, and hands keys to waiters of this process. The
// unique-key lock's, and the semaphores' (whose releases notify the permit table's channel and
// hand nothing over).
//
// Hand-over: a waiter that accepts one offers itself while it sleeps, and a release made through
// the same lock object claims the one that has waited longest (claim_offer; for a fair lock the
// queued one nearest the head), moves the row to it in the release's own statement
// (UniqueKeySql::hand_over: one commit, a new fencing token) and resolves the claim, which wakes
// the waiter with the key in hand. A claimed waiter sleeps on until its claim is resolved, even
// past its own timeout, so a key handed over always reaches a waiter that takes the lease.
//
// Notifications (PostgreSQL, when `listen`): one thread with its own session LISTENs on the lock
// table's channel; the last release of a key NOTIFYs with the head of the key's fair queue, a
// newline and the key as payload (postgresql.cpp). When a fair waiter heads the queue, only that
// waiter is woken, and only in the process where it waits. A release that granted the key to
// that head in its own statement (a grant: "head token sent_us" before the newline) hands it the
// token the same way (Grant::elsewhere). Otherwise each notification wakes one
// waiter of that key in this process (only one can win; waking them all would only add failed
// tries). A release made through this lock object wakes at commit instead (releasing() /
// released()). Waiters sleep until woken or until their backoff interval ends, so a missed or
// late notification only degrades to polling. Once the LISTEN is in place (the first, and after
// a lost session), every waiter tries again: a release made before it was not heard. Internal.
//
// Thread-safety: all methods may be called from many threads.
//
// fork(): a child's copy is never used or destroyed there (the parent's thread waits on its
// condition variables, and a destructor would wait for that thread forever): the lock object that
// owns it leaves it alone in a process other than the one that made it (made_elsewhere()).
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "boot_clock.hpp"
#include "dblock/connection_source.hpp"
#include "lease_core.hpp"

namespace dblock::detail {

class ReleaseListener {
 public:
  // With `listen`, start() starts the listening thread; if `source` cannot open a dedicated
  // connection or its driver cannot wait for notifications, waiters learn of releases made
  // elsewhere only by polling. Without it (MySQL), only releases made in this process wake or
  // hand over.
  ReleaseListener(ConnectionSource& source, std::string channel, bool listen);
  ~ReleaseListener();
  // Call once, before the first wait that should hear of releases made elsewhere.
  void start();
  // True in a process other than the one that made this listener (a forked child).
  bool made_elsewhere() const noexcept { return ::getpid() != made_in_; }

  // A key handed over: its fencing token, and when the statement that moved it was sent (the
  // lease runs from then at the latest).
  struct Grant {
    std::int64_t fencing_token = 0;
    BootClock::time_point sent{};
    // Granted by a release's own statement (not a hand-over of this lock object, which counted
    // the lease before it woke the waiter): the lease runs from the waiter's refresh of its place
    // that its process stamped `sent_us` (sent is that stamp), which the waiter checks is its
    // latest before it takes the key.
    bool elsewhere = false;
    std::int64_t sent_us = 0;
    // A release's grant of `fencing_token` for the refresh stamped `sent_us`.
    static Grant granted(std::int64_t fencing_token, std::int64_t sent_us) {
      return {fencing_token, BootClock::time_point(std::chrono::microseconds(sent_us)), true,
              sent_us};
    }
  };
  // The grant a notification's head carries ("head token sent_us"), if any; `head` is cut to
  // the waiter id.
  static std::optional<Grant> parse_head(std::string& head);
  class Interest;
  // The waiter of `key` that has waited longest (since its acquire began) among those asleep
  // before their deadline that accept a hand-over and are not `releaser` (a waiter with the
  // same owner would re-enter, not wait), now claimed: it sleeps until resolve(). With `fair`,
  // the queued one with the lowest place instead. nullptr when none, and also, for a lock that
  // is not fair, after kMaxHandOvers hand-overs of the key in a row: that release frees the key
  // for everyone (see released()), so that waiters in other processes are not shut out.
  static constexpr int kMaxHandOvers = 16;
  Interest* claim_offer(const std::string& key, const Owner& releaser, bool fair);
  // Ends a claim: with the key handed over (`grant`), or not (nothing: the waiter goes on trying
  // with its lease id, which also recognises a hand-over whose reply was lost).
  void resolve(Interest& waiter, std::optional<Grant> grant);

  // A lease of `key` made through this lock object starts (holding) or ends (not_holding). While
  // one lives, its release hands the key over or wakes a waiter here, so waiters need not poll
  // quickly (Interest::held_here).
  void holding(const std::string& key);
  void not_holding(const std::string& key);

  // Releases made in this process wake a waiter here as soon as they are committed, not when
  // their notification comes back from the server. Call releasing() before sending a release of
  // `key`, and released() after it, with whether it freed the key (false also when it failed).
  // From releasing() on, one notification of `key` is taken for the release's own and not
  // passed on, else it would wake a second waiter for a key the first one already took. Only the
  // holder can free a key, so during its release no other release of the key is expected.
  // `head` is the queue's head the release reported ("" when none). After a run of
  // kMaxHandOvers hand-overs, a release that frees the key wakes no waiter here at commit: they
  // learn of it from its notification, as waiters elsewhere do, or by polling.
  // `grant`: the release granted the key to `head` in its own statement.
  void releasing(const std::string& key);
  void released(const std::string& key, bool freed, const std::string& head,
                std::optional<Grant> grant = std::nullopt);

  // A waiter of `key` took what a release freed, and more may be free (a semaphore's permits;
  // a reader-writer lock's reader slots once its writer left): wakes the waiter of `key` asleep
  // longest here, if any, to try too. Each release's notification wakes one waiter per process.
  void pass_on(const std::string& key);

  // How many waiters of `key` sleep in wait() now (for tests).
  std::size_t asleep(const std::string& key) const;

  // Registers interest in `key` for as long as the returned guard lives.
  class Interest {
   public:
    Interest(ReleaseListener& listener, std::string key);
    ~Interest();
    Interest(const Interest&) = delete;
    Interest& operator=(const Interest&) = delete;
    // From now on, while asleep in wait(), this waiter may be handed the key as `lease` (its
    // key, lease id, owner and TTL) with `metadata`; both must outlive this object.
    void accept_hand_over(const LeaseInfo& lease, const std::string& metadata);
    const LeaseInfo& lease() const noexcept { return *lease_; }
    const std::string& metadata() const noexcept { return *metadata_; }
    // Its place in the key's fair queue (queued_as); "" when not queued. Read it while the
    // waiter is claimed.
    const std::string& waiter_id() const noexcept { return waiter_id_; }
    // A waiter that does not sleep here (AsyncLock's): from now until its destruction it stays
    // among the key's waiters, and a release that would wake it calls `nudge` instead, once until
    // rearm(). `nudge` runs with the listener's mutex held (on the listening thread or a
    // releasing one): it must only schedule the waiter's next try. Such a waiter is never handed
    // the key nor named a queue's head.
    void park(std::function<void()> nudge);
    // After a try of a parked waiter that found the key taken: the next release nudges it again
    // (at once, when one came meanwhile that no other waiter took).
    void rearm();
    // Sleeps until a release of the key wakes this waiter or hands it the key, or `timeout`
    // passes. A release that came while no one was asleep (say, during this waiter's last try)
    // wakes the next sleeper at once, so it is not missed.
    void wait(std::chrono::milliseconds timeout);
    // The key handed over during the last wait(), once.
    std::optional<Grant> take_grant();
    // A lease made through this lock object holds the key now (holding()).
    bool held_here() const;
    // The listener's LISTEN is in place: every release that frees a key elsewhere is heard.
    bool heard() const noexcept { return listener_.listening_.load(); }
    // This waiter's place in the key's fair queue (`seq` orders the places): from now on a
    // release that names it as the queue's head wakes this waiter and no other.
    void queued_as(const std::string& waiter_id, std::int64_t seq);

   private:
    friend class ReleaseListener;
    enum class HandOver { kNone, kOffered, kClaimed, kGranted, kDeclined };
    ReleaseListener& listener_;
    std::string key_;
    std::string waiter_id_;
    std::int64_t seq_ = 0;
    std::uint64_t arrival_ = 0;                         // order of the Interests of the listener
    std::chrono::steady_clock::time_point deadline_{};  // of the current wait()
    // Set under the listener's mutex. A waiter sleeps on a condition variable of its own, so a
    // release wakes the one it chose and no other.
    std::condition_variable cv_;
    bool woken_ = false;
    std::function<void()> nudge_;       // parked: called instead of cv_
    const LeaseInfo* lease_ = nullptr;  // accepts hand-overs when set
    const std::string* metadata_ = nullptr;
    HandOver hand_over_ = HandOver::kNone;
    Grant grant_{};
  };

 private:
  void run();
  void listen_once();

  ConnectionSource& source_;
  const std::string channel_;
  const bool listen_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // the thread's reconnect pause
  struct KeyState {
    bool wake = false;                  // a release not yet taken by a waiter
    std::string wake_for;               // the queued waiter it is for ("" any)
    std::optional<Grant> grant;         // what it granted wake_for
    std::multiset<std::string> queued;  // the waiter ids of this process's queued waiters
    int interested = 0;
    int echoes = 0;                // notifications of releases in this process still to come back
    std::deque<Interest*> asleep;  // the waiters in wait()
    int handed_in_a_row = 0;       // hand-overs since the key was last freed
    bool shared = false;           // the release in flight frees the key for everyone
  };
  // Wakes `waiter`: its condition variable, or its nudge when parked. Called with mu_ held.
  static void rouse(Interest& waiter);
  // The waiter asleep longest on `state`'s key that may be woken: `head` only, unless empty.
  // Called with mu_ held.
  static Interest* longest_asleep(const KeyState& state, const std::string& head);
  // A release freed `state`'s key, or granted it to `head` (`grant`): wakes the queue's `head`
  // if it waits here, else (no queue) the waiter asleep longest. Called with mu_ held.
  static void wake(KeyState& state, const std::string& head, std::optional<Grant> grant);
  // Wakes every waiter of `state`'s key, and the next to go to sleep (a release may have gone
  // unheard). Called with mu_ held.
  static void wake_all(KeyState& state);
  std::map<std::string, KeyState, std::less<>> keys_;
  std::map<std::string, int, std::less<>> held_here_;  // live leases per key (holding())
  std::uint64_t arrivals_ = 0;
  std::atomic<bool> listening_{false};  // between a LISTEN and the loss of its session
  bool lost_session_ = false;  // the listener thread's: a session ended since the last LISTEN
  bool stop_ = false;
  std::thread thread_;
  const pid_t made_in_ = ::getpid();
};

}  // namespace dblock::detail
