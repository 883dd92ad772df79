// SPDX-License-Identifier: Apache-2.0
// Grants in the releasing commit (PostgreSQL, fair waiting): a release that would free a key
// gives it, in its own statement, to the queue's head of any lock object or process, which takes
// it from the notification without a statement of its own. Tested from the guarantee's side: the
// key is never free between the two holds (an outsider that ignores the queue never gets it),
// the head holds it once (hold_count 1, its own lease id, a higher token), a head that missed the
// notification finds the grant at its next try, a grant to a head that left is freed by its
// leave, one to a head that died ends by its TTL, a dead-looking or expired place is woken and
// not granted, and a release sent again after it granted changes nothing.
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/observer.hpp"
#include "dblock/unique_key_lock.hpp"
#include "fair_fixture.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "ttl_lease.hpp"

namespace dblock::testing {
namespace {

// What an acquisition's end reported (AcquireEnded).
class Ends : public Observer {
 public:
  void acquire_ended(const AcquireEnded& e) override {
    std::lock_guard lock(mu_);
    statements_ = e.statements;
  }
  int statements() const {
    std::lock_guard lock(mu_);
    return statements_;
  }

 private:
  mutable std::mutex mu_;
  int statements_ = -1;
};

class FairGrantTest : public FairLockTest {
 protected:
  FairGrantTest() : FairLockTest("g") {}
  // Opens `n` of the pool's connections and gives them back, so that the test's statements find
  // them open (a connection opened during an acquisition sends its set-up statement there too).
  void warm_pool(int n) {
    std::vector<PooledConnection> open;
    for (int i = 0; i < n; ++i) open.push_back(pool_->acquire());
  }
  std::optional<LockRow> row(const std::string& key) {
    auto c = pool_->acquire();
    return find_lock(*c, tables_, key);
  }
  // A place as the library writes it, with a lease a release may grant (lease_ttl_ms), for a
  // waiter "ghost" that never takes it.
  void register_ghost(const std::string& key, const std::string& waiter_id,
                      std::int64_t place_ttl_ms, std::int64_t lease_ttl_ms) {
    auto c = pool_->acquire();
    const detail::Statement enqueue(detail::server_sql(c->server()).unique_key.enqueue,
                                    backend().dialect, tables_);
    const Owner ghost = Owner::named("ghost");
    c->execute(enqueue.sql(),
               enqueue.bind(detail::owner_args(ghost, {{"key", Value(key)},
                                                       {"waiter_id", Value(waiter_id)},
                                                       {"ttl_ms", Value(place_ttl_ms)},
                                                       {"lease_ttl_ms", Value(lease_ttl_ms)},
                                                       {"lock_delay_ms", Value(std::int64_t{0})},
                                                       {"metadata", Value()},
                                                       {"sent_us", Value(std::int64_t{42})}})));
  }
  // Sends the fair release statement of `lease`'s hold by hand, with `release_id`; the row it
  // returns (hold_count, head, notified, granted, sent_us).
  Result send_release(const Lease& lease, const std::string& release_id) {
    auto c = pool_->acquire();
    const detail::Statement release(detail::server_sql(c->server()).unique_key.release,
                                    backend().dialect, tables_, false, true);
    return c->execute(release.sql(),
                      release.bind(detail::owner_args(
                          lease.owner(), {{"key", Value(lease.key())},
                                          {"token", Value(lease.fencing_token())},
                                          {"channel", Value(tables_.name("locks"))},
                                          {"release_id", Value(release_id)},
                                          {"min_hold_ms", Value(std::int64_t{0})},
                                          {"lock_delay_ms", Value(std::int64_t{0})}})));
  }
  // An outsider that ignores the queue tries `key` in a loop until `stop`; how often it got it.
  std::thread outsider(const std::string& key, std::atomic<bool>& stop, std::atomic<int>& got) {
    return std::thread([this, key, &stop, &got] {
      auto unfair = make_lock(false);
      while (!stop) {
        if (auto l = unfair->try_acquire(key, as("outsider"))) {
          ++got;
          l->release();
        }
        std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
};

TEST_P(FairGrantTest, AReleaseGrantsTheKeyToTheHeadOfAnotherLockObjectThatSendsNothingToTakeIt) {
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  auto waiter_lock = make_lock(true, polling_every(milliseconds(2000)));
  ASSERT_NO_FATAL_FAILURE(start_listening(*waiter_lock, "waiter"));
  warm_pool(6);
  auto ends = std::make_shared<Ends>();
  LockOptions options = as("waiter");
  options.observer = ends;
  std::optional<Lease> lease;
  std::thread waiter([&] { lease = waiter_lock->acquire("k", milliseconds(10000), options); });
  wait_until_queued("k", 1);
  std::this_thread::sleep_for(milliseconds(100));  // asleep by now
  std::atomic<bool> stop{false};
  std::atomic<int> outsider_got{0};
  std::thread other = outsider("k", stop, outsider_got);
  std::this_thread::sleep_for(milliseconds(50));
  const std::int64_t holder_token = held->fencing_token();
  const auto released_at = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  const double waited = ms_since(released_at);
  std::this_thread::sleep_for(milliseconds(50));
  stop = true;
  other.join();
  ASSERT_TRUE(lease);
  std::printf("[ grant    ] %s: the head held the key %.1f ms after the release began\n",
              backend().name.c_str(), waited);
  EXPECT_LT(waited, 1000.0) << "the head was not told: it waited for its 2 s poll";
  EXPECT_EQ(outsider_got.load(), 0) << "the key was free between the two holds";
  // The refused try that queued it, and nothing after the release.
  EXPECT_EQ(ends->statements(), 1);
  EXPECT_GT(lease->fencing_token(), holder_token);
  const auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, lease->owner().thread);
  EXPECT_EQ(r->lease_id, lease->lease_id());
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_EQ(r->fencing_token, lease->fencing_token());
  EXPECT_EQ(queued("k"), 0) << "the grant left the head's place behind";
  // Its lease is a lease like any: renewed, and its release frees the key.
  EXPECT_TRUE(lease->renew());
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(holder_lock->try_acquire("k", as("next")));
}

TEST_P(FairGrantTest, AHeadThatMissedTheNotificationFindsTheGrantAtItsNextTry) {
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  // No listener: this waiter learns of releases by polling only.
  auto waiter_lock = make_lock(true, polling_every(milliseconds(300), false));
  std::optional<Lease> lease;
  std::thread waiter([&] { lease = waiter_lock->acquire("k", milliseconds(10000), as("waiter")); });
  wait_until_queued("k", 1);
  std::atomic<bool> stop{false};
  std::atomic<int> outsider_got{0};
  std::thread other = outsider("k", stop, outsider_got);
  const std::int64_t holder_token = held->fencing_token();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  const auto granted = row("k");
  ASSERT_TRUE(granted);
  EXPECT_EQ(granted->owner_thread, "name:waiter") << "the release did not grant the key";
  waiter.join();
  stop = true;
  other.join();
  ASSERT_TRUE(lease);
  EXPECT_EQ(outsider_got.load(), 0) << "the key was free between the two holds";
  EXPECT_EQ(lease->fencing_token(), granted->fencing_token);
  EXPECT_GT(lease->fencing_token(), holder_token);
  const auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hold_count, 1) << "the try re-entered the grant instead of taking it";
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(holder_lock->try_acquire("k", as("next")));
}

TEST_P(FairGrantTest, AGrantToAHeadThatLeavesIsFreedByItsLeaveAndNamesTheNext) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder", std::chrono::seconds(30), false));
  ASSERT_TRUE(held);
  register_ghost("k", "w-ghost", 30000, 30000);
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  auto r = row("k");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->owner_thread, "name:ghost");
  EXPECT_EQ(r->lease_id, "w-ghost");
  EXPECT_FALSE(lock->try_acquire("k", as("outsider"))) << "granted, the key is the ghost's";
  // The ghost gives up before it took the grant.
  auto c = pool_->acquire();
  const detail::Statement leave(detail::server_sql(c->server()).unique_key.leave, backend().dialect,
                                tables_);
  const Result left =
      c->execute(leave.sql(), leave.bind(detail::owner_args(
                                  Owner::named("ghost"), {{"waiter_id", Value("w-ghost")},
                                                          {"channel", Value(tables_.name("locks"))},
                                                          {"key", Value("k")}})));
  EXPECT_EQ(left.size(), 1u) << "the leave that freed the key notified no one";
  auto next = lock->try_acquire("k", as("outsider"));
  ASSERT_TRUE(next) << "the leave left the grant holding the key";
  EXPECT_GT(next->fencing_token(), r->fencing_token);
}

TEST_P(FairGrantTest, AGrantToAHeadThatDiedEndsByItsTtl) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder", std::chrono::seconds(30), false));
  ASSERT_TRUE(held);
  register_ghost("k", "w-dead", 30000, 1500);  // its process dies with the grant on its way
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  const auto r = row("k");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->owner_thread, "name:ghost");
  EXPECT_FALSE(lock->try_acquire("k", as("outsider")));
  const auto started = Clock::now();
  auto next = lock->acquire("k", milliseconds(10000), as("outsider"));
  ASSERT_TRUE(next);
  // The grant lasts the ghost's TTL from its last refresh (less than 1.5 s from here).
  EXPECT_LT(ms_since(started), 3000.0);
  EXPECT_GT(next->fencing_token(), r->fencing_token);
}

TEST_P(FairGrantTest, AHeadWhosePlaceExpiredOrLooksDeadIsNotGranted) {
  auto lock = make_lock();
  {
    // An expired place is no head at all.
    auto held = lock->try_acquire("k", as("holder", std::chrono::seconds(30), false));
    ASSERT_TRUE(held);
    register_ghost("k", "w-expired", 200, 30000);
    std::this_thread::sleep_for(milliseconds(400));
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
    auto next = lock->try_acquire("k", as("outsider"));
    ASSERT_TRUE(next) << "the release granted the key to an expired place";
    next->release();
  }
  {
    // A live place not refreshed for more than half its TTL: its waiter is woken, not granted.
    auto held = lock->try_acquire("k2", as("holder", std::chrono::seconds(30), false));
    ASSERT_TRUE(held);
    register_ghost("k2", "w-stale", 30000, 30000);
    auto c = pool_->acquire();
    c->execute("UPDATE " + tables_.qualified(backend().dialect, "lock_waiters") +
               " SET refreshed_at = refreshed_at - interval '20 seconds'"
               " WHERE waiter_id = 'w-stale'");
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
    EXPECT_TRUE(make_lock(false)->try_acquire("k2", as("outsider")))
        << "the release granted the key to a waiter that looks dead";
  }
}

TEST_P(FairGrantTest, AReleaseSentAgainAfterItGrantedChangesNothing) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder", std::chrono::seconds(30), false));
  ASSERT_TRUE(held);
  register_ghost("k", "w-ghost", 30000, 30000);
  const Result first = send_release(*held, "r-once");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first.int64_at(0, "hold_count"), 0);
  EXPECT_EQ(first.at(0, "head"), "w-ghost");
  ASSERT_TRUE(first.at(0, "granted"));
  EXPECT_EQ(first.int64_at(0, "sent_us"), 42);
  const auto granted = row("k");
  ASSERT_TRUE(granted);
  EXPECT_EQ(granted->fencing_token, first.int64_at(0, "granted"));
  // Its reply lost, the release is sent again with the same release id.
  const Result again = send_release(*held, "r-once");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again.int64_at(0, "hold_count"), 0);
  EXPECT_FALSE(again.at(0, "granted"));
  EXPECT_FALSE(again.at(0, "notified")) << "a resent release notified again";
  const auto after = row("k");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->owner_thread, "name:ghost");
  EXPECT_EQ(after->fencing_token, granted->fencing_token);
  EXPECT_EQ(after->hold_count, 1);
  EXPECT_EQ(after->lease_id, "w-ghost");
}

INSTANTIATE_TEST_SUITE_P(Pairs, FairGrantTest, ::testing::ValuesIn(postgresql_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
