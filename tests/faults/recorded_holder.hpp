// SPDX-License-Identifier: Apache-2.0
// A lock client that writes its history (history.hpp) as it goes: it acquires one key, renews
// the lease itself every third of the TTL on a thread of its own (so the history knows when each
// renewal was sent), and releases. Used by the test process and by the fault worker alike.
//
// Thread-safety: one thread drives a RecordedHolder; lost(), token() and valid_until_us() may be
// read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dblock/lock.hpp"
#include "history.hpp"

namespace dblock::testing {

// One try_acquire of `key` as `client` through `lock`, written to `history` when granted, as a
// hold without a TTL: one the server ends with its session or transaction, or the release does.
std::optional<Lease> try_acquire_recorded(Lock& lock, HistoryWriter& history,
                                          const std::string& client, const std::string& key,
                                          const LockOptions& options);

class RecordedHolder {
 public:
  RecordedHolder(Lock& lock, HistoryWriter& history, std::string client, std::string key,
                 std::chrono::milliseconds ttl);
  ~RecordedHolder();  // stops renewing; a lease still held is released (errors swallowed)
  RecordedHolder(const RecordedHolder&) = delete;
  RecordedHolder& operator=(const RecordedHolder&) = delete;

  // How acquire() waits for a held key: trying every 20 ms, or in the lock's own acquire(key,
  // wait), which queues a fair lock's waiter and sleeps on release notifications.
  enum class Waiting { kTries, kInLock };
  // Waits until `wait` has passed (at least one try). True when acquired; then renews in the
  // background. Faults (dblock::Error) propagate. kInLock records the acquire as sent when the
  // call began: a lease granted while the call waited runs from a later write of its own, so the
  // history's end of it (sent + TTL) is never later than the library's.
  bool acquire(std::chrono::milliseconds wait, Waiting waiting = Waiting::kTries);
  bool held() const noexcept { return lease_.has_value(); }
  std::int64_t token() const noexcept { return token_.load(); }
  // The lease's own verdict (Lease::lost()).
  bool lost() const noexcept;
  // Waits up to `limit` for lost() to turn true (looking every 5 ms); returns lost().
  bool lost_within(std::chrono::milliseconds limit) const;
  // One TTL after the latest successful acquire or renew was sent (monotonic microseconds).
  std::int64_t valid_until_us() const noexcept { return valid_until_us_.load(); }
  // Renews now, from the caller's thread (the background renewals stop first).
  bool renew_now();
  // Stops renewing and releases. Returns the outcome's name, or "error" when the release
  // failed with a dblock::Error (whose message goes to `error` if given).
  std::string release(std::string* error = nullptr);
  // Stops renewing, leaving the lease to expire (a holder that stops answering).
  void stop_renewing();
  // Transactional strategies: runs fn(Connection&) on the lease's connection, for the critical
  // section's writes, and returns its result. A renewal is a round trip on that same connection,
  // which one thread at a time may use, so the two take turns. Throws std::logic_error when
  // nothing is held or the lease has no connection.
  template <class Fn>
  auto in_transaction(Fn&& fn) {
    std::lock_guard lock(connection_mu_);
    return fn(lease_connection());
  }

 private:
  void renew_loop();
  Connection& lease_connection();

  Lock& lock_;
  HistoryWriter& history_;
  const std::string client_;
  const std::string key_;
  const std::chrono::milliseconds ttl_;
  std::optional<Lease> lease_;
  std::atomic<std::int64_t> token_{0};
  std::atomic<std::int64_t> valid_until_us_{0};
  std::mutex mu_;
  std::mutex connection_mu_;  // the lease's connection: renewals and in_transaction take turns
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread renewer_;
};

}  // namespace dblock::testing
