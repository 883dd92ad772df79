// Wakes waiters when a key is released, from PostgreSQL notifications: one thread with its own
// session LISTENs on the lock table's channel; the last release of a key NOTIFYs with the head of
// the key's fair queue, a newline and the key as payload (postgresql.cpp). When a fair waiter
// heads the queue, only that waiter is woken, and only in the process where it waits; otherwise
// each notification wakes one waiter of that key in this process (only one can win; waking them
// all would only add failed tries). A release made through this lock object wakes at commit
// instead (releasing() / released()). Waiters sleep until woken or until their backoff interval
// ends, so a missed or late notification only degrades to polling. Internal.
//
// Thread-safety: all methods may be called from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "dblock/connection_source.hpp"

namespace dblock::detail {

class ReleaseListener {
 public:
  // Starts the listening thread. If `source` cannot open a dedicated connection or its driver
  // cannot wait for notifications, available() turns false and waiters poll.
  ReleaseListener(ConnectionSource& source, std::string channel);
  ~ReleaseListener();

  bool available() const noexcept { return available_.load(); }

  // Releases made in this process wake a waiter here as soon as they are committed, not when
  // their notification comes back from the server. Call releasing() before sending a release of
  // `key`, and released() after it, with whether it freed the key (false also when it failed).
  // From releasing() on, one notification of `key` is taken for the release's own and not
  // passed on, else it would wake a second waiter for a key the first one already took. Only the
  // holder can free a key, so during its release no other release of the key is expected.
  // `head` is the queue's head the release reported ("" when none).
  void releasing(const std::string& key);
  void released(const std::string& key, bool freed, const std::string& head);

  // Registers interest in `key` for as long as the returned guard lives.
  class Interest {
   public:
    Interest(ReleaseListener& listener, std::string key);
    ~Interest();
    Interest(const Interest&) = delete;
    Interest& operator=(const Interest&) = delete;
    // Sleeps until a release of the key wakes this waiter, or `timeout` passes. A release that
    // came while no one was asleep (say, during this waiter's last try) wakes the next sleeper
    // at once, so it is not missed.
    void wait(std::chrono::milliseconds timeout) const;
    // This waiter's place in the key's fair queue: from now on a release that names it as the
    // queue's head wakes this waiter and no other.
    void queued_as(const std::string& waiter_id);

   private:
    ReleaseListener& listener_;
    std::string key_;
    std::string waiter_id_;
  };

 private:
  void run();
  void listen_once();

  ConnectionSource& source_;
  const std::string channel_;
  std::atomic<bool> available_{true};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // the thread's reconnect pause
  struct KeyState {
    bool wake = false;                  // a release not yet taken by a waiter
    std::string wake_for;               // the queued waiter it is for ("" any)
    std::multiset<std::string> queued;  // the waiter ids of this process's queued waiters
    int interested = 0;
    int echoes = 0;              // notifications of releases in this process still to come back
    std::condition_variable cv;  // the waiters of this key sleep here
  };
  // A release freed `state`'s key: wakes the queue's `head` if it waits here, else (no queue)
  // one waiter. Called with mu_ held.
  static void wake(KeyState& state, const std::string& head);
  std::map<std::string, KeyState, std::less<>> keys_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dblock::detail
