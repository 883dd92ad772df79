// Wakes waiters when a key is released, from PostgreSQL notifications: one thread with its own
// session LISTENs on the lock table's channel; the last release of a key NOTIFYs with the key
// as payload. Waiters register a key, take its generation before trying, and sleep until the
// generation moves or their backoff interval ends, so a missed or late notification only
// degrades to polling. Internal.
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
    // The key's release count so far; take it before trying to acquire.
    std::uint64_t generation() const;
    // Sleeps until the key is released after `seen`, or `timeout` passes.
    void wait(std::uint64_t seen, std::chrono::milliseconds timeout) const;

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
    std::uint64_t generation = 0;
    int interested = 0;
  };
  std::map<std::string, KeyState, std::less<>> keys_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dblock::detail
