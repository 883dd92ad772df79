// SPDX-License-Identifier: Apache-2.0
// The fixtures most integration tests start from: one database x driver pair, dblock's tables
// migrated under a fresh prefix, and every table under that prefix dropped at teardown, so that
// tests share a database without meeting. MigratedTablesTest gives the test a connection of its
// own; MigratedPoolTest a pool over the pair's URL, for the locks under test.
//
//   class SemaphoreTest : public MigratedPoolTest {
//    protected:
//     SemaphoreTest() : MigratedPoolTest("sem", 16) {}  // tables sem<random>_*, 16 connections
//   };
//
// MigratedLockTest adds the one lock object most tests of a strategy use. A fixture that holds
// other locks over pool_ resets them in its own TearDown before calling MigratedPoolTest's.
//
// Thread-safety: as GoogleTest fixtures.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "backends.hpp"
#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "dblock/release_outcome.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

// The time vocabulary of the strategies' tests.
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

inline milliseconds since(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t);
}

// A test on one pair with dblock's tables migrated under a fresh prefix, dropped afterwards.
// conn_ is an open connection to the pair's database.
class MigratedTablesTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;
  const Backend& backend() const { return GetParam(); }

  TableNames tables_;
  std::unique_ptr<Connection> conn_;
};

// A test on one pair with dblock's tables migrated under a fresh prefix (`stem`, a random name
// and "_"), dropped afterwards, and a pool of `pool_size` connections over the pair's URL.
class MigratedPoolTest : public ::testing::TestWithParam<Backend> {
 protected:
  MigratedPoolTest(std::string stem, std::size_t pool_size)
      : stem_(std::move(stem)), pool_size_(pool_size) {}
  void SetUp() override;
  void TearDown() override;
  const Backend& backend() const { return GetParam(); }
  // Lock options for the named owner `owner`, with the TTL and renewal a test chooses (by
  // default LockOptions' own: 30 s, renewed in the background).
  static LockOptions as(const std::string& owner,
                        std::chrono::milliseconds ttl = std::chrono::seconds(30),
                        bool auto_renew = true);
  // Rows of `key` in dblock's table `base` ("lock_waiters", "semaphore_permits"), live or not.
  int rows_of_key(const std::string& base, const std::string& key);
  // Frees `key`'s lock row as an operator's `dblock release --force` does; fails the test when
  // there is none or it changed meanwhile.
  void release_by_operator(const std::string& key);
  // Frees the one permit of `key` (a Semaphore's or a ReadWriteLock's) as an operator's `dblock
  // release --force` does; fails the test unless there is exactly one, unchanged meanwhile.
  void release_permit_by_operator(const std::string& key);

  TableNames tables_;
  std::unique_ptr<Pool> pool_;

 private:
  std::string stem_;
  std::size_t pool_size_;
};

// A MigratedPoolTest of one lock object: lock_, an `L` over pool_ made with `Options` naming the
// test's tables, is made in SetUp and closed, with the pool, before the tables are dropped.
template <class L, class Options>
class MigratedLockTest : public MigratedPoolTest {
 protected:
  using MigratedPoolTest::MigratedPoolTest;
  void SetUp() override {
    MigratedPoolTest::SetUp();
    lock_ = std::make_unique<L>(*pool_, Options{.tables = tables_});
  }
  void TearDown() override {
    lock_.reset();
    pool_.reset();
    MigratedPoolTest::TearDown();
  }

  // Takes "k" for "a" with a 100 ms TTL and checks, 300 ms later, that the lease is not lost
  // and keeps "b" out: for a strategy whose lease lasts until its release, whatever the TTL.
  // `while_held(held)` runs before "b" tries; the lease is released at the end.
  void expect_held_past_its_ttl(const std::function<void(Lease& held)>& while_held = {}) {
    LockOptions o = as("a");
    o.ttl = milliseconds(100);
    auto held = lock_->try_acquire("k", o);
    ASSERT_TRUE(held);
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_FALSE(held->lost());
    if (while_held) while_held(*held);
    EXPECT_FALSE(lock_->try_acquire("k", as("b")));
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  }

  // While `key` is held by another owner: a try by "b" answers "not acquired" in under 50 ms,
  // and the key "other" is free to "b".
  void expect_a_try_on_the_held_key_fails_at_once(const std::string& key) {
    const auto start = Clock::now();
    EXPECT_FALSE(lock_->try_acquire(key, as("b")));
    EXPECT_LT(since(start), milliseconds(50));
    EXPECT_TRUE(lock_->try_acquire("other", as("b")));
  }

  // Two leases of "a" on "k": one hold, taken twice (check both before use).
  std::pair<std::optional<Lease>, std::optional<Lease>> one_hold_twice() {
    auto first = lock_->try_acquire("k", as("a"));
    auto second = lock_->try_acquire("k", as("a"));
    return {std::move(first), std::move(second)};
  }

  // Gives back such a hold: the inner lease's release only decrements, and "b" gets the key
  // once the outer one is released, not before.
  void expect_inner_then_outer_release(Lease& inner, Lease& outer) {
    EXPECT_EQ(inner.release(), ReleaseOutcome::kDecremented);
    EXPECT_FALSE(lock_->try_acquire("k", as("b")));  // still held after the inner release
    EXPECT_EQ(outer.release(), ReleaseOutcome::kReleased);
    EXPECT_TRUE(lock_->try_acquire("k", as("b")));
  }

  // "b" waiting for `key`, up to 10 s, on a thread of its own: the future gives the fencing
  // token of the lease it got (released at once), or -1.
  std::future<std::int64_t> waiter_for(const std::string& key) {
    return std::async(std::launch::async, [this, key] {
      auto lease = lock_->acquire(key, milliseconds(10000), as("b"));
      return lease ? lease->fencing_token() : std::int64_t{-1};
    });
  }

  std::unique_ptr<L> lock_;
};

}  // namespace dblock::testing
