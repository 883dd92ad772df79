// Wakes waiters when a key is released, from PostgreSQL notifications: one thread with its own
// session LISTENs on the lock table's channel; the last release of a key NOTIFYs with the key
// as payload. Each notification wakes one waiter of that key in this process (only one can win;
// waking them all would only add failed tries). Waiters sleep until woken or until their backoff
// interval ends, so a missed or late notification only degrades to polling. Internal.
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
  mutable std::condition_variable cv_;
  struct KeyState {
    bool wake = false;  // a release not yet taken by a waiter
    int interested = 0;
  };
  std::map<std::string, KeyState, std::less<>> keys_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dblock::detail
