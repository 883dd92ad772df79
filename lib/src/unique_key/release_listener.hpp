// Wakes waiters when a key is released, from PostgreSQL notifications: one thread with its own
// session LISTENs on the lock table's channel; the last release of a key NOTIFYs with the key
// as payload. Each notification wakes one waiter of that key in this process (only one can win;
// waking them all would only add failed tries); a release made through this lock object wakes
// one at commit instead (releasing() / released()). Waiters sleep until woken or until their
// backoff interval ends, so a missed or late notification only degrades to polling. Internal.
//
// Thread-safety: all methods may be called from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
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
  void releasing(const std::string& key);
  void released(const std::string& key, bool freed);

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

   private:
    ReleaseListener& listener_;
    std::string key_;
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
    bool wake = false;  // a release not yet taken by a waiter
    int interested = 0;
    int echoes = 0;              // notifications of releases in this process still to come back
    std::condition_variable cv;  // the waiters of this key sleep here
  };
  std::map<std::string, KeyState, std::less<>> keys_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dblock::detail
