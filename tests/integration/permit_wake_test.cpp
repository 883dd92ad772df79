// SPDX-License-Identifier: Apache-2.0
// Notified waiting for semaphores and reader-writer locks (PostgreSQL): a release that frees a
// permit NOTIFYs the permit table's channel, and waiters sleep on LISTEN between their tries.
// Every waiter here pauses 3 s between tries, so one that gets in well within that was woken by
// the release, not by its own poll; each holder and waiter has a lock object of its own, as
// owners in other processes do (the wake-up then comes from the server). From the guarantee's
// side: a freed permit reaches a waiter at once, a writer leaving lets every waiting reader in,
// a writer waiting for readers is let in by the last to leave, and with notify off the waiter
// polls (the notification made the difference).
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/semaphore.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

constexpr milliseconds kPause{3000};  // every waiter's pause between tries
constexpr milliseconds kWoken{1500};  // got in within this after the release: woken

class PermitWakeTest : public MigratedPoolTest {
 protected:
  PermitWakeTest() : MigratedPoolTest("pwake", 16) {}
  std::unique_ptr<Semaphore> semaphore(int permits, bool notify = true) {
    return std::make_unique<Semaphore>(
        *pool_, permits,
        SemaphoreOptions{.tables = tables_, .backoff = {kPause, kPause, kPause}, .notify = notify});
  }
  std::unique_ptr<ReadWriteLock> rw_lock() {
    return std::make_unique<ReadWriteLock>(
        *pool_, ReadWriteLockOptions{
                    .tables = tables_, .backoff = {kPause, kPause, kPause}, .notify = true});
  }
  // `lock.acquire(key)` as `owner` on a thread of its own: the lease, and when it was granted.
  struct Waiter {
    std::optional<Lease> lease;
    Clock::time_point got{};
    std::atomic<bool> done{false};  // lease and got are set
    std::thread thread;
  };
  static void wait_on(Lock& lock, const std::string& owner, Waiter& w) {
    w.thread = std::thread([&lock, owner, &w] {
      w.lease = lock.acquire("k", std::chrono::seconds(10), as(owner));
      w.got = Clock::now();
      w.done = true;
    });
  }
  // Long enough for a waiter's first try to have failed and its LISTEN to be in place.
  static void let_them_sleep() { std::this_thread::sleep_for(milliseconds(500)); }
};

TEST_P(PermitWakeTest, APermitFreedElsewhereReachesAWaiterAtOnce) {
  auto holder = semaphore(1);
  auto elsewhere = semaphore(1);
  auto held = holder->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  Waiter w;
  wait_on(*elsewhere, "waiter", w);
  let_them_sleep();
  const auto released = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  w.thread.join();
  ASSERT_TRUE(w.lease) << "the waiter did not get the freed permit";
  const auto took = std::chrono::duration_cast<milliseconds>(w.got - released);
  EXPECT_LT(took, kWoken) << "the waiter got the permit by polling, " << took.count()
                          << " ms after the release";
  std::printf("[ woken    ] %s: the permit reached the waiter %lld ms after the release\n",
              backend().name.c_str(), static_cast<long long>(took.count()));
}

TEST_P(PermitWakeTest, WithoutNotifyTheWaiterPolls) {
  auto holder = semaphore(1, false);
  auto elsewhere = semaphore(1, false);
  auto held = holder->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  Waiter w;
  const auto started = Clock::now();
  wait_on(*elsewhere, "waiter", w);
  let_them_sleep();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  w.thread.join();
  ASSERT_TRUE(w.lease);
  // Its first try failed; the next comes a whole pause later.
  EXPECT_GE(w.got - started, kPause);
}

TEST_P(PermitWakeTest, EachPermitFreedReachesOneOfTheWaiters) {
  auto holder = semaphore(2);
  auto elsewhere = semaphore(2);
  auto a = holder->try_acquire("k", as("holder-a"));
  auto b = holder->try_acquire("k", as("holder-b"));
  ASSERT_TRUE(a && b);
  Waiter w1, w2;
  wait_on(*elsewhere, "waiter-1", w1);
  wait_on(*elsewhere, "waiter-2", w2);
  let_them_sleep();
  const auto released = Clock::now();
  EXPECT_EQ(a->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(b->release(), ReleaseOutcome::kReleased);
  w1.thread.join();
  w2.thread.join();
  ASSERT_TRUE(w1.lease && w2.lease);
  EXPECT_LT(w1.got - released, kWoken);
  EXPECT_LT(w2.got - released, kWoken);
}

TEST_P(PermitWakeTest, AWriterLeavingLetsEveryWaitingReaderIn) {
  // Three readers wait through one lock object, one through another: the writer's release
  // notifies once; each lock object's first reader in passes the wake-up on to the next.
  auto writer_side = rw_lock();
  auto readers_a = rw_lock();
  auto readers_b = rw_lock();
  auto writer = writer_side->writer().try_acquire("k", as("writer"));
  ASSERT_TRUE(writer);
  std::vector<Waiter> waiters(4);
  for (int i = 0; i < 3; ++i) wait_on(readers_a->reader(), "a" + std::to_string(i), waiters[i]);
  wait_on(readers_b->reader(), "b", waiters[3]);
  let_them_sleep();
  const auto released = Clock::now();
  EXPECT_EQ(writer->release(), ReleaseOutcome::kReleased);
  for (auto& w : waiters) {
    w.thread.join();
    ASSERT_TRUE(w.lease) << "a reader did not get in";
    EXPECT_LT(w.got - released, kWoken) << "a reader got in by polling";
  }
}

TEST_P(PermitWakeTest, AWriterWaitingForReadersIsLetInByTheLastToLeave) {
  auto readers = rw_lock();
  auto writers = rw_lock();
  auto r1 = readers->reader().try_acquire("k", as("r1"));
  auto r2 = readers->reader().try_acquire("k", as("r2"));
  ASSERT_TRUE(r1 && r2);
  Waiter w;
  wait_on(writers->writer(), "writer", w);  // takes slot 0, then waits for the readers
  let_them_sleep();
  EXPECT_EQ(r1->release(), ReleaseOutcome::kReleased);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(w.done) << "the writer got in with a reader still in";
  const auto released = Clock::now();
  EXPECT_EQ(r2->release(), ReleaseOutcome::kReleased);
  w.thread.join();
  ASSERT_TRUE(w.lease);
  EXPECT_LT(w.got - released, kWoken) << "the writer got in by polling";
}

INSTANTIATE_TEST_SUITE_P(Pairs, PermitWakeTest, ::testing::ValuesIn(postgresql_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
