// SPDX-License-Identifier: Apache-2.0
// What the fair-waiting tests (fair_wait_test.cpp, fair_grant_test.cpp) share: lock objects on
// the test's tables, a listener known to be listening, and the key's queue as the table holds it.
//
//   class FairWaitTest : public FairLockTest { ... };
//   auto lock = make_lock(true, polling_every(milliseconds(2000)));
//   wait_until_queued("k", 1);
//
// Thread-safety: as MigratedPoolTest.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

class FairLockTest : public MigratedPoolTest {
 protected:
  explicit FairLockTest(std::string stem) : MigratedPoolTest(std::move(stem), 12) {}
  std::unique_ptr<UniqueKeyLock> make_lock(bool fair = true, UniqueKeyLockOptions options = {}) {
    options.tables = tables_;
    options.fair = fair;
    return std::make_unique<UniqueKeyLock>(*pool_, std::move(options));
  }
  // Every backoff wait `d` (a quick grant then proves a wake-up or a hand-over, not a poll);
  // with `notify` false, no listener either.
  static UniqueKeyLockOptions polling_every(milliseconds d, bool notify = true) {
    UniqueKeyLockOptions options;
    options.backoff = {d, d, d};
    options.notify = notify;
    return options;
  }
  // Starts `lock`'s release listener (it listens from the first blocking acquire on) and gives
  // its LISTEN time to be in place, so that a test's releases are heard.
  static void start_listening(UniqueKeyLock& lock, const std::string& owner) {
    auto warm = lock.acquire("warm", milliseconds(1000), as(owner));
    ASSERT_TRUE(warm);
    warm->release();
    std::this_thread::sleep_for(milliseconds(500));
  }
  // Registrations of `key`, live or not.
  int queued(const std::string& key) { return rows_of_key("lock_waiters", key); }
  void wait_until_queued(const std::string& key, int n) {
    const auto start = Clock::now();
    while (queued(key) < n) {
      ASSERT_LT(ms_since(start), 10000.0) << "waiter " << n << " never joined the queue";
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
};

}  // namespace dblock::testing
