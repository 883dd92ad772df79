// SPDX-License-Identifier: Apache-2.0
// Fair waiting for the unique-key lock (UniqueKeyLockOptions::fair), against every database x
// driver pair: keys go to waiters in the order they came, a holder asking again queues behind
// them, a dead waiter drops out by its TTL (and the cleaner deletes it), a registration sent
// twice keeps one place, a waiter out of time leaves (and so does one whose joining reply was
// lost), re-entry needs no turn, and on PostgreSQL a release wakes the queue's head in
// whichever lock object it waits. `dblock locks` (queued_waiters) counts the waiters, and
// list_waiter_queues names each queue's head.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "backends.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/unique_key_lock.hpp"
#include "fair_fixture.hpp"
#include "forwarding_connection.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::testing {
namespace {

class FairWaitTest : public FairLockTest {
 protected:
  FairWaitTest() : FairLockTest("f") {}
  static UniqueKeyLockOptions polling_every_2s() { return polling_every(milliseconds(2000)); }
  // Sends the enqueue statement as the library does, for a waiter that then vanishes.
  std::int64_t register_waiter(const std::string& key, const std::string& waiter_id,
                               std::int64_t ttl_ms) {
    auto c = pool_->acquire();
    const detail::Statement enqueue(detail::server_sql(c->server()).unique_key.enqueue,
                                    backend().dialect, tables_);
    const Owner ghost = Owner::named("ghost");
    const auto r = c->execute(enqueue.sql(), enqueue.bind({{"key", Value(key)},
                                                           {"waiter_id", Value(waiter_id)},
                                                           {"host", Value(ghost.host)},
                                                           {"process", Value(ghost.process)},
                                                           {"thread", Value(ghost.thread)},
                                                           {"ttl_ms", Value(ttl_ms)},
                                                           // No lease: a release wakes it and
                                                           // grants it nothing.
                                                           {"lease_ttl_ms", Value()},
                                                           {"lock_delay_ms", Value()},
                                                           {"metadata", Value()},
                                                           {"sent_us", Value()}}));
    return backend().dialect == Dialect::kPostgreSQL
               ? r.int64_at(0, "seq")
               : static_cast<std::int64_t>(r.last_insert_id());
  }

  // The owner (thread column) of `key`'s live row; "" when free.
  std::string holder_of(const std::string& key) {
    auto c = pool_->acquire();
    for (const auto& r : list_locks(*c, tables_)) {
      if (r.key == key && !r.expired) return r.owner_thread;
    }
    return "";
  }
};

TEST_P(FairWaitTest, WaitersGetTheKeyInTheOrderTheyCame) {
  // Each waiter joins only once the one before it is queued; each holds the key 30 ms. A lock
  // object per waiter, as separate processes would have.
  constexpr int kWaiters = 5;
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  std::vector<std::unique_ptr<UniqueKeyLock>> locks;
  for (int i = 0; i < kWaiters; ++i) locks.push_back(make_lock());
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto l = locks[i]->acquire("k", milliseconds(20000), as("waiter" + std::to_string(i)));
      ASSERT_TRUE(l) << i;
      {
        std::lock_guard lock(mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(milliseconds(30));
      l->release();
    });
    wait_until_queued("k", i + 1);
  }
  {
    // What `dblock locks` shows.
    auto c = pool_->acquire();
    EXPECT_EQ(queued_waiters(*c, tables_), (std::map<std::string, std::int64_t>{{"k", kWaiters}}));
    // `dblock locks --watch`: the queue's head is the waiter that came first, waiting since
    // before now on the database clock; a prefix that is not the key's leaves the queue out.
    const std::vector<WaiterQueue> queues = list_waiter_queues(*c, tables_);
    ASSERT_EQ(queues.size(), 1u);
    EXPECT_EQ(queues[0].key, "k");
    EXPECT_EQ(queues[0].waiters, kWaiters);
    EXPECT_EQ(queues[0].head_thread, "name:waiter0");
    EXPECT_EQ(queues[0].head_since.size(), database_now(*c).size()) << queues[0].head_since;
    EXPECT_LT(queues[0].head_since, database_now(*c));
    EXPECT_TRUE(list_waiter_queues(*c, tables_, "j").empty());
    EXPECT_EQ(list_waiter_queues(*c, tables_, "k").size(), 1u);
  }
  held->release();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(queued("k"), 0) << "every waiter leaves the queue once it has the key";
}

TEST_P(FairWaitTest, AHolderAskingAgainQueuesBehindTheWaiters) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  std::atomic<bool> b_had_it{false};
  std::thread b([&] {
    auto l = lock->acquire("k", milliseconds(20000), as("b"));
    ASSERT_TRUE(l);
    b_had_it = true;
    std::this_thread::sleep_for(milliseconds(50));
  });
  wait_until_queued("k", 1);
  // Re-entry needs no turn.
  auto again = lock->try_acquire("k", as("a"));
  ASSERT_TRUE(again) << "the holder's re-entry waited for the queue";
  again->release();
  held->release();
  // The key is free (or already B's): a try by the old holder must not take it from B.
  EXPECT_FALSE(lock->try_acquire("k", as("a"))) << "the old holder barged past a queued waiter";
  auto later = lock->acquire("k", milliseconds(20000), as("a"));
  EXPECT_TRUE(later);
  EXPECT_TRUE(b_had_it) << "A got the key back before the waiter that queued first";
  b.join();
}

TEST_P(FairWaitTest, AnUnfairLockObjectIgnoresTheQueue) {
  // Documented: fairness holds among fair lock objects.
  auto fair = make_lock();
  auto unfair = make_lock(false);
  auto held = fair->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  register_waiter("k", "w-queued", 30000);
  held->release();
  EXPECT_FALSE(fair->try_acquire("k", as("c")));
  EXPECT_TRUE(unfair->try_acquire("k", as("c")));
}

TEST_P(FairWaitTest, ADeadWaiterDropsOutByItsTtlAndTheCleanerDeletesIt) {
  auto lock = make_lock();
  register_waiter("k", "w-dead", 1000);  // registered, then its process died
  const auto start = Clock::now();
  EXPECT_FALSE(lock->try_acquire("k", as("a"))) << "a live registration was passed";
  auto l = lock->acquire("k", milliseconds(10000), as("a"));
  const double waited = ms_since(start);
  ASSERT_TRUE(l);
  EXPECT_GT(waited, 800.0) << "the key was taken before the dead waiter's place expired";
  EXPECT_LT(waited, 3000.0) << "the dead waiter held up the queue past its TTL";
  l->release();
  CleanOptions o;
  o.grace = milliseconds(0);
  auto c = pool_->acquire();
  const CleanResult r = clean(*c, tables_, o);
  EXPECT_EQ(r.tables.at("lock_waiters"), 1u);
  EXPECT_EQ(queued("k"), 0);
}

TEST_P(FairWaitTest, ARegistrationSentAgainKeepsItsPlace) {
  // A registration whose reply was lost is sent again with the same waiter id: it finds its
  // own place (same seq, one row) instead of queueing twice, and a later waiter stays behind it.
  const std::int64_t first = register_waiter("k", "w-1", 30000);
  const std::int64_t other = register_waiter("k", "w-2", 30000);
  const std::int64_t again = register_waiter("k", "w-1", 30000);
  EXPECT_EQ(again, first);
  EXPECT_GT(other, first);
  EXPECT_EQ(queued("k"), 2);
}

TEST_P(FairWaitTest, ATryThatJoinsSentAgainKeepsItsPlaceAndItsPlaceNeverBlocksIt) {
  // Where a refused try takes the waiter's place in the same statement (PostgreSQL), that
  // statement is sent again, unchanged, after a lost reply: it must find its own place (same
  // seq, one row), and once the key is free take it past that place, and leave the queue.
  if (!detail::server_sql(Server::kPostgreSQL).unique_key.acquire_joins_queue ||
      backend().dialect != Dialect::kPostgreSQL) {
    return;  // MySQL: a refused waiter registers with enqueue (see above)
  }
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  auto c = pool_->acquire();
  const detail::Statement acquire(detail::server_sql(c->server()).unique_key.acquire,
                                  backend().dialect, tables_, false, true);
  const Owner me = Owner::named("resender");
  const auto send = [&] {
    return c->execute(acquire.sql(), acquire.bind({{"key", Value("k")},
                                                   {"lease_id", Value("lease-1")},
                                                   {"host", Value(me.host)},
                                                   {"process", Value(me.process)},
                                                   {"thread", Value(me.thread)},
                                                   {"ttl_ms", Value(std::int64_t{30000})},
                                                   {"lock_delay_ms", Value(std::int64_t{0})},
                                                   {"metadata", Value()},
                                                   {"seq", Value()},
                                                   {"waiter_id", Value("w-resent")},
                                                   {"join_ttl_ms", Value(std::int64_t{30000})},
                                                   {"sent_us", Value(std::int64_t{1})}}));
  };
  const Result first = send();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(first.at(0, "seq")) << "refused, and not queued";
  EXPECT_FALSE(first.at(0, "fencing_token"));
  const Result again = send();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again.int64_at(0, "seq"), first.int64_at(0, "seq"));
  EXPECT_EQ(queued("k"), 1);
  held->release();
  const Result got = send();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got.at(0, "fencing_token")) << "the waiter's own place kept it from the free key";
  EXPECT_FALSE(got.at(0, "seq"));
  EXPECT_EQ(holder_of("k"), me.thread);
  EXPECT_EQ(queued("k"), 0) << "the waiter that got the key kept its place";
}

TEST_P(FairWaitTest, AWaiterOutOfTimeLeavesTheQueue) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(lock->acquire("k", milliseconds(300), as("b")));
  EXPECT_EQ(queued("k"), 0);
  held->release();
  EXPECT_TRUE(lock->try_acquire("k", as("c"))) << "a waiter that gave up still holds its place";
}

TEST_P(FairWaitTest, AReleaseWakesTheQueuesHeadInItsOwnLockObject) {
  // Waiters poll only every 2 s; each in its own lock object, as in separate processes. On
  // PostgreSQL each release must wake the head at once; elsewhere they poll.
  if (backend().dialect != Dialect::kPostgreSQL) return;  // MySQL has no wake-up: it polls
  UniqueKeyLockOptions options = polling_every_2s();
  auto holder_lock = make_lock(true, options);
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  constexpr int kWaiters = 3;
  std::vector<std::unique_ptr<UniqueKeyLock>> locks;
  for (int i = 0; i < kWaiters; ++i) locks.push_back(make_lock(true, options));
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto l = locks[i]->acquire("k", milliseconds(20000), as("w" + std::to_string(i)));
      ASSERT_TRUE(l);
      std::this_thread::sleep_for(milliseconds(10));
    });
    wait_until_queued("k", i + 1);
  }
  std::this_thread::sleep_for(milliseconds(100));  // all asleep
  const auto start = Clock::now();
  held->release();
  for (auto& t : waiters) t.join();
  const double all = ms_since(start);
  std::printf("[ fair     ] %s: %d queued waiters had the key in %.0f ms\n", backend().name.c_str(),
              kWaiters, all);
  EXPECT_LT(all, 1500.0) << "a release did not wake the queue's head";
}

TEST_P(FairWaitTest, AReleaseHandsTheKeyToTheQueuesHeadOnly) {
  // Through one lock object, a release hands the key to the queue's head when the head waits
  // there: the row is the head's when the release returns. When the head waits in another lock
  // object (another process), the release hands nothing to the waiter behind it there: the head
  // gets the key first. Polling alone is slow here (every backoff wait is 2 s).
  UniqueKeyLockOptions options = polling_every_2s();
  auto lock = make_lock(true, options);
  auto elsewhere = make_lock(true, options);
  const auto waiter = [&](UniqueKeyLock& l, const std::string& key, const std::string& who,
                          std::optional<Lease>& out, std::atomic<bool>& done) {
    return std::thread([&l, key, who, &out, &done] {
      out = l.acquire(key, milliseconds(15000), as(who));
      done = true;
    });
  };
  {
    auto held = lock->try_acquire("k", as("holder"));
    ASSERT_TRUE(held);
    std::optional<Lease> first, second;
    std::atomic<bool> first_done{false}, second_done{false};
    std::thread t1 = waiter(*lock, "k", "w1", first, first_done);
    wait_until_queued("k", 1);
    std::thread t2 = waiter(*lock, "k", "w2", second, second_done);
    wait_until_queued("k", 2);
    std::this_thread::sleep_for(milliseconds(500));  // both asleep
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
    EXPECT_EQ(holder_of("k"), Owner::named("w1").thread) << "the head was not handed the key";
    t1.join();
    ASSERT_TRUE(first);
    EXPECT_FALSE(second_done) << "the second waiter returned while the head held the key";
    first->release();
    t2.join();
    ASSERT_TRUE(second);
    EXPECT_EQ(holder_of("k"), Owner::named("w2").thread);
    second->release();
  }
  {
    auto held = lock->try_acquire("k2", as("holder"));
    ASSERT_TRUE(held);
    std::optional<Lease> head, behind;
    std::atomic<bool> head_done{false}, behind_done{false};
    std::thread t1 = waiter(*elsewhere, "k2", "h", head, head_done);
    wait_until_queued("k2", 1);
    std::thread t2 = waiter(*lock, "k2", "b", behind, behind_done);
    wait_until_queued("k2", 2);
    std::this_thread::sleep_for(milliseconds(500));
    EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
    EXPECT_NE(holder_of("k2"), Owner::named("b").thread)
        << "the key was handed past the queue's head in another lock object";
    t1.join();
    ASSERT_TRUE(head) << "the head in another lock object never got the key";
    EXPECT_FALSE(behind_done) << "the waiter behind returned while the head held the key";
    head->release();
    t2.join();
    EXPECT_TRUE(behind);
  }
  EXPECT_EQ(queued("k") + queued("k2"), 0) << "a waiter handed the key kept its place";
}

// One connection whose replies to statements containing `match` go wrong when armed: after
// hold_next(), the next one's reply comes back `delay` late; after lose_next(n), the next n
// replies are lost (each statement has run, and the caller gets kConnectionLost). It counts the
// statements sent that contain `match` (sent()). Dedicated sessions come from `dedicated`.
class TamperedReplies final : public ConnectionSource {
 public:
  TamperedReplies(ConnectionSource& dedicated, std::unique_ptr<Connection> conn, std::string match)
      : dedicated_(dedicated),
        one_(single(std::make_unique<Tampering>(std::move(conn), *this))),
        match_(std::move(match)) {}
  void hold_next(milliseconds delay) {
    delay_ = delay;
    held_ = true;
  }
  void lose_next(int n) { lost_ = n; }
  int sent() const { return sent_; }
  Dialect dialect() const noexcept override { return one_->dialect(); }
  PooledConnection acquire() override { return one_->acquire(); }  // given back to one_
  std::string describe() const override { return one_->describe(); }
  std::unique_ptr<Connection> open_dedicated() override { return dedicated_.open_dedicated(); }

 protected:
  void give_back(Connection*) noexcept override {}  // lends nothing of its own

 private:
  class Tampering final : public ForwardingConnection {
   public:
    Tampering(std::unique_ptr<Connection> inner, TamperedReplies& owner)
        : ForwardingConnection(std::move(inner)), owner_(owner) {}
    Result execute(std::string_view sql, std::span<const Value> params) override {
      const bool matched = sql.find(owner_.match_) != std::string_view::npos;
      if (matched) ++owner_.sent_;
      Result r = inner().execute(sql, params);
      if (!matched) return r;
      if (owner_.lost_ > 0) {
        --owner_.lost_;
        throw Error(ErrorCode::kConnectionLost, "the reply was lost (test)");
      }
      if (owner_.held_.exchange(false)) std::this_thread::sleep_for(owner_.delay_);
      return r;
    }

   private:
    TamperedReplies& owner_;
  };
  ConnectionSource& dedicated_;
  std::unique_ptr<ConnectionSource> one_;
  std::string match_;
  milliseconds delay_{0};
  std::atomic<bool> held_{false};
  std::atomic<int> lost_{0};
  std::atomic<int> sent_{0};
};

TEST_P(FairWaitTest, AReleaseNamingTheHeadBeforeItsPlaceIsBackStillWakesIt) {
  // On PostgreSQL a waiter's first refused try takes its place in the same statement. The
  // reply to it is held back 600 ms; meanwhile the holder (another lock object, as another
  // process) releases, and its notification names the waiter as the queue's head. The waiter
  // must take the key as soon as its reply is back, not sleep out its 2 s poll.
  if (backend().dialect != Dialect::kPostgreSQL) return;  // MySQL has no wake-up: it polls
  UniqueKeyLockOptions options = polling_every_2s();
  auto holder_lock = make_lock(true, options);
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  TamperedReplies source(*pool_, backend().connect(),
                         tables_.qualified(backend().dialect, "lock_waiters"));
  options.tables = tables_;
  options.fair = true;
  UniqueKeyLock waiter_lock(source, options);
  ASSERT_NO_FATAL_FAILURE(start_listening(waiter_lock, "waiter"));
  source.hold_next(milliseconds(600));
  std::optional<Lease> lease;
  std::thread waiter([&] { lease = waiter_lock.acquire("k", milliseconds(10000), as("waiter")); });
  wait_until_queued("k", 1);  // placed; the reply is on its way back
  const auto released_at = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  const double waited = ms_since(released_at);
  ASSERT_TRUE(lease);
  std::printf("[ fair     ] %s: the head named before its place was back had the key in %.0f ms\n",
              backend().name.c_str(), waited);
  EXPECT_LT(waited, 1400.0) << "the waiter slept out its poll: the release naming it went unheard";
  lease->release();
}

TEST_P(FairWaitTest, AFairWaiterThatHearsEveryReleasePollsAtTheSlowestPace) {
  // On PostgreSQL, once its process listens, a fair waiter is named by the release that makes
  // it the head: it need not poll at the backoff's quicker steps. Behind a holder in another
  // lock object (as in another process), over 1.5 s it sends its joining try and no poll (the
  // backoff alone would poll at 10, 20, 40 ... ms: 7 tries); a release then wakes it at once.
  if (backend().dialect != Dialect::kPostgreSQL) return;  // MySQL has no wake-up: it polls
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  TamperedReplies source(*pool_, backend().connect(),
                         tables_.qualified(backend().dialect, "locks"));
  UniqueKeyLockOptions options;
  options.backoff = {milliseconds(10), milliseconds(2000), milliseconds(5)};
  options.tables = tables_;
  options.fair = true;
  UniqueKeyLock waiter_lock(source, options);
  ASSERT_NO_FATAL_FAILURE(start_listening(waiter_lock, "waiter"));
  const int before = source.sent();
  std::optional<Lease> lease;
  std::thread waiter([&] { lease = waiter_lock.acquire("k", milliseconds(10000), as("waiter")); });
  std::this_thread::sleep_for(milliseconds(1500));
  const int tries = source.sent() - before;
  const auto released_at = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  const double waited = ms_since(released_at);
  EXPECT_LE(tries, 2) << "the waiter polled at the backoff's pace although it hears releases";
  ASSERT_TRUE(lease);
  EXPECT_LT(waited, 1000.0) << "the release did not wake the waiter";
  lease->release();
}

TEST_P(FairWaitTest, AHeadThatLeavesAFreeKeyWakesTheNextWaiter) {
  // The queue's head leaves while the key is free (here a registration whose waiter then gives
  // up, as one whose time ran out). On PostgreSQL the leave names the next waiter, who must take
  // the key at once, not sleep out its 2 s poll.
  if (backend().dialect != Dialect::kPostgreSQL) return;  // MySQL has no wake-up: it polls
  register_waiter("k", "w-first", 30000);
  auto lock = make_lock(true, polling_every_2s());
  ASSERT_NO_FATAL_FAILURE(start_listening(*lock, "next"));
  std::optional<Lease> lease;
  std::thread waiter([&] { lease = lock->acquire("k", milliseconds(10000), as("next")); });
  wait_until_queued("k", 2);
  std::this_thread::sleep_for(milliseconds(100));  // asleep by now
  auto c = pool_->acquire();
  const detail::Statement leave(detail::server_sql(c->server()).unique_key.leave, backend().dialect,
                                tables_);
  const auto left_at = Clock::now();
  const Owner ghost = Owner::named("ghost");
  c->execute(leave.sql(), leave.bind({{"waiter_id", Value("w-first")},
                                      {"channel", Value(tables_.name("locks"))},
                                      {"key", Value("k")},
                                      {"host", Value(ghost.host)},
                                      {"process", Value(ghost.process)},
                                      {"thread", Value(ghost.thread)}}));
  waiter.join();
  const double waited = ms_since(left_at);
  ASSERT_TRUE(lease);
  std::printf("[ fair     ] %s: the next waiter had the key %.0f ms after the head left\n",
              backend().name.c_str(), waited);
  EXPECT_LT(waited, 1000.0) << "the head's leave did not wake the next waiter";
  lease->release();
}

TEST_P(FairWaitTest, AWaiterWhoseJoiningReplyIsLostLeavesNoPlaceBehind) {
  // The statement that takes a waiter's place (PostgreSQL: its refused first try; MySQL: the
  // enqueue after it) runs, and its reply is lost, and so is the reply to the one resend. The
  // acquire fails with kConnectionLost; the place the server committed must not stay behind to
  // hold up the queue until its waiter TTL ends.
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  TamperedReplies source(*pool_, backend().connect(),
                         "INSERT INTO " + tables_.qualified(backend().dialect, "lock_waiters"));
  UniqueKeyLockOptions options = polling_every_2s();
  options.tables = tables_;
  options.fair = true;
  options.waiter_ttl = milliseconds(30000);
  UniqueKeyLock waiter_lock(source, options);
  source.lose_next(2);
  try {
    waiter_lock.acquire("k", milliseconds(5000), as("waiter"));
    FAIL() << "both replies were lost, yet the acquire went on";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
  EXPECT_EQ(queued("k"), 0) << "the failed waiter's place was left in the queue";
  held->release();
  const auto start = Clock::now();
  auto next = holder_lock->acquire("k", milliseconds(5000), as("next"));
  EXPECT_TRUE(next) << "the key stayed out of reach";
  EXPECT_LT(ms_since(start), 1000.0) << "a place left behind held up the queue";
}

TEST_P(FairWaitTest, AWaiterTtlOutOfRangeIsRefused) {
  UniqueKeyLockOptions options;
  options.waiter_ttl = milliseconds(100);
  try {
    make_lock(true, options);
    FAIL() << "a 100 ms waiter TTL was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("waiter_ttl must be from 300 ms"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, FairWaitTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
