// SPDX-License-Identifier: Apache-2.0
// The unique-key lock against every database x driver pair, in one process: mutual exclusion
// between owners, reentrancy, expiry and takeover, lost leases, renewal, claims, waiting, and
// the PostgreSQL release notification. Multi-process scenarios are in lock_process_test.cpp.
#include "dblock/unique_key_lock.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "backends.hpp"
#include "dblock/json.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "dblock/timed_lockable.hpp"
#include "migrated_fixture.hpp"
#include "renewer.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::testing {
namespace {

class UniqueKeyLockTest : public MigratedPoolTest {
 protected:
  UniqueKeyLockTest() : MigratedPoolTest("u", 4) {}
  std::unique_ptr<UniqueKeyLock> make_lock(UniqueKeyLockOptions options = {}) {
    options.tables = tables_;
    return std::make_unique<UniqueKeyLock>(*pool_, std::move(options));
  }
  // `key`'s listed row, and find_lock() must read the same one.
  std::optional<LockRow> row(const std::string& key) {
    auto c = pool_->acquire();
    std::optional<LockRow> listed;
    for (auto& r : list_locks(*c, tables_)) {
      if (r.key == key) listed = r;
    }
    const std::optional<LockRow> found = find_lock(*c, tables_, key);
    EXPECT_EQ(found.has_value(), listed.has_value()) << key;
    if (found && listed) {
      EXPECT_EQ(found->lease_id, listed->lease_id);
      EXPECT_EQ(found->fencing_token, listed->fencing_token);
      EXPECT_EQ(found->hold_count, listed->hold_count);
      EXPECT_EQ(found->expired, listed->expired);
    }
    return listed;
  }
};

TEST_P(UniqueKeyLockTest, FindLockReadsThatKeyAloneLiterally) {
  auto lock = make_lock();
  auto k = lock->try_acquire("k", as("a"));
  auto longer = lock->try_acquire("k2", as("b"));
  auto percent = lock->try_acquire("k%", as("c"));
  ASSERT_TRUE(k && longer && percent);
  auto c = pool_->acquire();
  const auto found = find_lock(*c, tables_, "k");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->key, "k");
  EXPECT_EQ(found->fencing_token, k->fencing_token());
  EXPECT_EQ(found->owner_thread, "name:a");
  EXPECT_EQ(find_lock(*c, tables_, "k%")->fencing_token, percent->fencing_token());
  EXPECT_FALSE(find_lock(*c, tables_, "k_"));
  EXPECT_FALSE(find_lock(*c, tables_, "missing"));
  EXPECT_EQ(k->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(find_lock(*c, tables_, "k")) << "a released key is free";
}

TEST_P(UniqueKeyLockTest, OneOwnerAtATime) {
  auto lock = make_lock();
  auto a = lock->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  EXPECT_GT(a->fencing_token(), 0);
  EXPECT_EQ(a->key(), "k");
  EXPECT_FALSE(lock->try_acquire("k", as("b")));
  EXPECT_TRUE(lock->try_acquire("other-key", as("b")));
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, "name:a");
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_FALSE(r->expired);
  EXPECT_EQ(r->fencing_token, a->fencing_token());
}

TEST_P(UniqueKeyLockTest, ReleaseFreesTheKeyAndTheNextHolderGetsAHigherToken) {
  auto lock = make_lock();
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto l = lock->try_acquire("k", as(i % 2 ? "a" : "b"));
    ASSERT_TRUE(l) << i;
    EXPECT_GT(l->fencing_token(), last);
    last = l->fencing_token();
    EXPECT_EQ(l->release(), ReleaseOutcome::kReleased);
    EXPECT_FALSE(l->valid());
  }
  EXPECT_FALSE(row("k"));  // free rows are not listed
}

TEST_P(UniqueKeyLockTest, ReentrantForTheSameOwnerOnly) {
  auto lock = make_lock();
  auto first = lock->try_acquire("k", as("me"));
  auto second = lock->try_acquire("k", as("me"));
  auto third = lock->try_acquire("k", as("me"));
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(second->fencing_token(), first->fencing_token());
  EXPECT_EQ(third->fencing_token(), first->fencing_token());
  EXPECT_EQ(row("k")->hold_count, 3);

  // Another thread of this process (a different default owner) cannot get in.
  std::optional<bool> other_got;
  std::thread([&] { other_got = lock->try_acquire("k").has_value(); }).join();
  EXPECT_EQ(other_got, false);

  EXPECT_EQ(third->release(), ReleaseOutcome::kDecremented);
  EXPECT_FALSE(lock->try_acquire("k", as("other")));
  EXPECT_EQ(second->release(), ReleaseOutcome::kDecremented);
  EXPECT_FALSE(lock->try_acquire("k", as("other")));
  EXPECT_EQ(first->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(lock->try_acquire("k", as("other")));
}

TEST_P(UniqueKeyLockTest, DefaultOwnerIsTheCallingThread) {
  auto lock = make_lock();
  auto mine = lock->try_acquire("k");
  ASSERT_TRUE(mine);
  auto again = lock->try_acquire("k");  // same thread: reentrant
  ASSERT_TRUE(again);
  EXPECT_EQ(mine->owner(), Owner::current_thread());
}

TEST_P(UniqueKeyLockTest, ExpiredLeaseIsTakenOverAndTheStaleHolderChangesNothing) {
  auto lock = make_lock();
  LockOptions short_lived = as("stale", milliseconds(300));
  short_lived.auto_renew = false;
  auto stale = lock->try_acquire("k", short_lived);
  ASSERT_TRUE(stale);
  EXPECT_FALSE(lock->try_acquire("k", as("fresh")));
  std::this_thread::sleep_for(milliseconds(500));
  auto fresh = lock->try_acquire("k", as("fresh"));
  ASSERT_TRUE(fresh);
  EXPECT_GT(fresh->fencing_token(), stale->fencing_token());

  EXPECT_FALSE(stale->renew(milliseconds(10000)));
  EXPECT_TRUE(stale->lost());
  EXPECT_EQ(stale->release(), ReleaseOutcome::kNotHeld);
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, "name:fresh");
  EXPECT_EQ(r->fencing_token, fresh->fencing_token());
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_EQ(fresh->release(), ReleaseOutcome::kReleased);
}

TEST_P(UniqueKeyLockTest, ReleaseIsOwnerAndTokenChecked) {
  auto lock = make_lock();
  LockOptions o = as("me", milliseconds(300));
  o.auto_renew = false;
  auto old_lease = lock->try_acquire("k", o);
  ASSERT_TRUE(old_lease);
  std::this_thread::sleep_for(milliseconds(500));
  // The same owner takes the key again after expiry: a new acquisition with a new token.
  auto new_lease = lock->try_acquire("k", as("me"));
  ASSERT_TRUE(new_lease);
  EXPECT_GT(new_lease->fencing_token(), old_lease->fencing_token());
  // The old handle's release must not release the new acquisition.
  EXPECT_EQ(old_lease->release(), ReleaseOutcome::kNotHeld);
  EXPECT_FALSE(lock->try_acquire("k", as("someone-else")));
  EXPECT_EQ(new_lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(UniqueKeyLockTest, AutoRenewKeepsTheLeasePastItsTtl) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder", milliseconds(300)));
  ASSERT_TRUE(held);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_FALSE(lock->try_acquire("k", as("intruder"))) << "after " << (i + 1) * 200 << " ms";
  }
  EXPECT_FALSE(held->lost());
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
}

TEST_P(UniqueKeyLockTest, TheRenewerKeepsTheTtlOfTheLatestRenew) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder", milliseconds(30000)));
  ASSERT_TRUE(held);
  ASSERT_TRUE(held->renew(milliseconds(300)));  // from now on renewed every 100 ms for 300 ms
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_FALSE(lock->try_acquire("k", as("intruder")));
  EXPECT_FALSE(held->lost());
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
}

// Per-call cost: acquiring an auto-renewed lease whose first renewal is seconds away wakes
// neither the renewer's scheduling thread nor its watchdog (each used to look at every watched
// lease on every acquisition). 200 acquisitions, 200 releases: the threads look a few times a
// second by themselves, never once per acquisition.
TEST_P(UniqueKeyLockTest, AcquiringALongLeaseWakesNoRenewerThread) {
  auto lock = make_lock();
  {
    auto first = lock->try_acquire("warm-up", as("holder", milliseconds(30000)));
    ASSERT_TRUE(first);  // starts the renewer's threads
    EXPECT_EQ(first->release(), ReleaseOutcome::kReleased);
  }
  const std::uint64_t before = detail::Renewer::instance().passes();
  const auto started = Clock::now();
  for (int i = 0; i < 200; ++i) {
    auto lease = lock->try_acquire("k" + std::to_string(i), as("holder", milliseconds(30000)));
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  }
  const std::uint64_t passes = detail::Renewer::instance().passes() - before;
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count() + 1;
  // Each thread looks at least once a second; allow three looks per thread and second.
  EXPECT_LE(passes, static_cast<std::uint64_t>(6 * seconds))
      << passes << " looks in " << seconds << " s for 200 acquisitions";
}

TEST_P(UniqueKeyLockTest, ALeaseTakenAwayIsReportedLost) {
  auto lock = make_lock();
  std::atomic<int> lost_calls{0};
  LockOptions o = as("victim", milliseconds(300));
  o.on_lost = [&](const std::string& key) {
    if (key == "k") ++lost_calls;
  };
  auto held = lock->try_acquire("k", o);
  ASSERT_TRUE(held);
  // An operator force-releases the row behind the holder's back.
  auto c = pool_->acquire();
  c->execute("UPDATE " + tables_.qualified(backend().dialect, "locks") +
             " SET hold_count = 0, fencing_token = fencing_token + 1");
  c.reset();
  // lost() may turn true by the holder's own clock (a TTL without a successful renewal, on a
  // loaded machine) a moment before the renewer's thread calls on_lost: wait for both.
  auto deadline = Clock::now() + std::chrono::seconds(3);
  while ((!held->lost() || lost_calls.load() == 0) && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(held->lost());
  EXPECT_EQ(lost_calls.load(), 1);
  EXPECT_EQ(held->release(), ReleaseOutcome::kNotHeld);
}

TEST_P(UniqueKeyLockTest, RetryWithTheSameLeaseIdRecognisesItsOwnAcquisition) {
  // A lost reply: the server applied the insert, the client retries the same statement.
  auto c = pool_->acquire();
  const auto& sql = detail::server_sql(c->server()).unique_key;
  const detail::Statement statement(sql.acquire, backend().dialect, tables_);
  const std::string& acquire = statement.sql();
  Owner me = Owner::named("retrier");
  const auto params = statement.bind({{"key", Value("k")},
                                      {"lease_id", Value("lease-abc")},
                                      {"host", Value(me.host)},
                                      {"process", Value(me.process)},
                                      {"thread", Value(me.thread)},
                                      {"ttl_ms", Value(30000)},
                                      {"lock_delay_ms", Value(0)},
                                      {"metadata", Value()}});
  auto token_of = [&](const Result& r) {
    return sql.results_in_rows ? (r.empty() ? 0 : r.int64_at(0, "fencing_token"))
                               : static_cast<std::int64_t>(r.last_insert_id());
  };
  auto first = token_of(c->execute(acquire, params));
  auto retry = token_of(c->execute(acquire, params));
  c.reset();
  EXPECT_GT(first, 0);
  EXPECT_EQ(retry, first);
  EXPECT_EQ(row("k")->hold_count, 1);  // not counted twice
  auto lock = make_lock();
  EXPECT_FALSE(lock->try_acquire("k", as("someone-else")));
}

TEST_P(UniqueKeyLockTest, ClaimOnce) {
  auto lock = make_lock();
  ClaimOptions o;
  o.claim_id = "order-1";
  o.metadata = R"({"user": 7})";
  auto claim = lock->claim("voucher:9:user:7", o);
  ASSERT_TRUE(claim);
  EXPECT_GT(claim->fencing_token, 0);
  auto retry = lock->claim("voucher:9:user:7", o);  // same claim id: a lost reply's retry
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->fencing_token, claim->fencing_token);
  ClaimOptions other;
  EXPECT_FALSE(lock->claim("voucher:9:user:7", other));
  EXPECT_FALSE(lock->try_acquire("voucher:9:user:7", as("x")));
  // Not even the claiming thread can re-enter a claim as a lease (which would renew it, make it
  // expire and let a second claim in).
  EXPECT_FALSE(lock->try_acquire("voucher:9:user:7"));
  EXPECT_FALSE(lock->claim("voucher:9:user:7"));
  auto again = lock->claim("voucher:9:user:7", o);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fencing_token, claim->fencing_token);
  auto r = row("voucher:9:user:7");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->expires_at, "never");
  EXPECT_FALSE(r->expired);
  EXPECT_NE(r->metadata.find("\"user\""), std::string::npos) << r->metadata;
}

// Metadata is JSON text: any JSON value is stored with the row and read back as the same value
// (PostgreSQL's jsonb may respace it and reorder members); empty text stores none.
TEST_P(UniqueKeyLockTest, MetadataHoldsAnyJsonValue) {
  auto lock = make_lock();
  const std::vector<std::string> values = {
      R"({"job": "nightly", "n": 3, "tags": ["a", "b"], "nested": {"ok": true}})",
      R"(["x", 1, null])",
      R"("just a string, with \"quotes\" and \u00e9")",
      "12345678901234567890",
      "-2.5e-3",
      "false",
      "null",
      std::string(30, '[') + std::string(30, ']'),
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string key = "meta-" + std::to_string(i);
    LockOptions o = as("m");
    o.metadata = values[i];
    auto lease = lock->try_acquire(key, o);
    ASSERT_TRUE(lease) << values[i];
    auto r = row(key);
    ASSERT_TRUE(r);
    EXPECT_EQ(metadata_json(r->metadata), nlohmann::json::parse(values[i]))
        << values[i] << " came back as " << r->metadata;
  }
  auto none = lock->try_acquire("meta-none", as("m"));
  ASSERT_TRUE(none);
  EXPECT_EQ(row("meta-none")->metadata, "");
  // The opt-in helper writes what the database reads back.
  LockOptions o = as("m");
  o.metadata = metadata_text({{"user", "\xc3\xa9"}, {"ids", {1, 2}}});
  auto helped = lock->try_acquire("meta-helper", o);
  ASSERT_TRUE(helped);
  EXPECT_EQ(metadata_json(row("meta-helper")->metadata),
            nlohmann::json({{"user", "\xc3\xa9"}, {"ids", {1, 2}}}));
}

TEST_P(UniqueKeyLockTest, TimedAcquireWaitsForTheReleaseAndTimesOutOtherwise) {
  auto lock = make_lock();
  auto held = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  auto started = Clock::now();
  EXPECT_FALSE(lock->acquire("k", milliseconds(300), as("waiter")));
  auto waited = Clock::now() - started;
  EXPECT_GE(waited, milliseconds(290));
  EXPECT_LT(waited, milliseconds(1500));

  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(200));
    held->release();
  });
  auto got = lock->acquire("k", milliseconds(5000), as("waiter"));
  releaser.join();
  EXPECT_TRUE(got);
}

TEST_P(UniqueKeyLockTest, WithLockReleasesOnEveryPath) {
  auto lock = make_lock();
  auto result = with_lock(*lock, "k", milliseconds(0), as("a"),
                          [](Lease& l) { return l.fencing_token() > 0 ? 42 : 0; });
  EXPECT_EQ(result, 42);
  EXPECT_THROW(with_lock(*lock, "k", milliseconds(0), as("a"),
                         [](Lease&) { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_TRUE(lock->try_acquire("k", as("b")));  // released despite the exception
}

TEST_P(UniqueKeyLockTest, WorksWithStdLockGuards) {
  auto lock = make_lock();
  LockableKey mine(*lock, "k", as("a"));
  LockableKey theirs(*lock, "k", as("b"));
  {
    std::unique_lock guard(mine, std::chrono::milliseconds(500));
    ASSERT_TRUE(guard.owns_lock());
    EXPECT_FALSE(theirs.try_lock());
    EXPECT_FALSE(theirs.try_lock_for(std::chrono::milliseconds(50)));
  }
  std::scoped_lock both(theirs);
  EXPECT_NE(theirs.lease(), nullptr);
}

TEST_P(UniqueKeyLockTest, KeysAreCaseAndByteExact) {
  auto lock = make_lock();
  auto lower = lock->try_acquire("key", as("a"));
  auto upper = lock->try_acquire("KEY", as("b"));
  auto spaced = lock->try_acquire("key ", as("c"));
  EXPECT_TRUE(lower && upper && spaced);
}

TEST_P(UniqueKeyLockTest, HandoffToABlockedWaiter) {
  // PostgreSQL wakes the waiter at once; MySQL polls. Polling alone is made slow here (every
  // backoff wait is 300 ms), so a fast handoff proves the wake-up. A release through the waiter's
  // own lock object wakes it in the process; one through another lock object (as from another
  // process) wakes it by the server's notification.
  UniqueKeyLockOptions options;
  options.backoff = {milliseconds(300), milliseconds(300), milliseconds(300)};
  auto lock = make_lock(options);
  auto elsewhere = make_lock(options);
  for (UniqueKeyLock* holder_lock : {lock.get(), elsewhere.get()}) {
    const char* path = holder_lock == lock.get() ? "same lock" : "another lock";
    std::vector<double> handoff_ms;
    for (int i = 0; i < 9; ++i) {
      auto held = holder_lock->try_acquire("k", as("holder"));
      ASSERT_TRUE(held);
      std::atomic<bool> waiting{false};
      Clock::time_point got_at;
      std::thread waiter([&] {
        waiting = true;
        auto l = lock->acquire("k", milliseconds(5000), as("waiter"));
        got_at = Clock::now();
        EXPECT_TRUE(l);
      });
      while (!waiting) std::this_thread::yield();
      std::this_thread::sleep_for(milliseconds(100));  // the waiter is asleep now
      auto released_at = Clock::now();
      held->release();
      waiter.join();
      handoff_ms.push_back(std::chrono::duration<double, std::milli>(got_at - released_at).count());
    }
    std::sort(handoff_ms.begin(), handoff_ms.end());
    double median = handoff_ms[handoff_ms.size() / 2];
    std::printf("[ handoff  ] %s, %s: median %.2f ms, max %.2f ms over %zu handoffs\n",
                backend().name.c_str(), path, median, handoff_ms.back(), handoff_ms.size());
    RecordProperty(
        std::string("handoff_median_ms_") + (holder_lock == lock.get() ? "same" : "other"),
        std::to_string(median));
    if (backend().dialect == Dialect::kPostgreSQL) {
      EXPECT_LT(median, 100.0) << path << ": the release did not wake the waiter";
    }
  }
}

TEST_P(UniqueKeyLockTest, EachReleaseWakesAWaiterUntilAllHadTheKey) {
  // Four waiters of one key, in this process, polling only every 2 s; each holds the key 20 ms.
  // Each release must reach one of the waiters left: a hand-over or wake-up lost (or spent on a
  // waiter of another key, or taken for the release's own notification twice) leaves the rest
  // to their 2 s polls. Through one lock object (handed over in the process, on both servers)
  // and, on PostgreSQL, through a lock object each (woken by the server's notifications; MySQL
  // has no notifications, and polls).
  UniqueKeyLockOptions options;
  options.backoff = {milliseconds(2000), milliseconds(2000), milliseconds(2000)};
  for (bool lock_each : {false, true}) {
    if (lock_each && backend().dialect != Dialect::kPostgreSQL) continue;
    std::vector<std::unique_ptr<UniqueKeyLock>> locks;
    for (int i = 0; i < (lock_each ? 5 : 1); ++i) locks.push_back(make_lock(options));
    auto lock_of = [&](int i) -> UniqueKeyLock& { return *locks[lock_each ? i : 0]; };
    const std::string key = std::string("w") + (lock_each ? "1" : "0");
    auto held = lock_of(4).try_acquire(key, as("holder"));
    ASSERT_TRUE(held);
    // A waiter of another key on the same lock objects, which nothing here releases.
    auto other = lock_of(4).try_acquire(key + "-other", as("holder"));
    ASSERT_TRUE(other);
    std::atomic<int> asleep{0}, served{0};
    std::thread bystander([&] {
      ++asleep;
      EXPECT_FALSE(lock_of(0).acquire(key + "-other", milliseconds(1500), as("bystander")));
    });
    std::vector<std::thread> waiters;
    for (int w = 0; w < 4; ++w) {
      waiters.emplace_back([&, w] {
        ++asleep;
        auto l = lock_of(w).acquire(key, milliseconds(10000), as("w" + std::to_string(w)));
        EXPECT_TRUE(l);
        if (!l) return;
        std::this_thread::sleep_for(milliseconds(20));
        ++served;
        l->release();
      });
    }
    while (asleep < 5) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(200));  // all asleep after their first try
    auto released_at = Clock::now();
    held->release();
    for (auto& t : waiters) t.join();
    const double all_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - released_at).count();
    bystander.join();
    EXPECT_EQ(served.load(), 4);
    std::printf("[ handoff  ] %s, %s: 4 waiters served in %.0f ms\n", backend().name.c_str(),
                lock_each ? "a lock each" : "one lock", all_ms);
    EXPECT_LT(all_ms, 1500.0) << (lock_each ? "a lock each" : "one lock")
                              << ": a release did not wake the next waiter";
  }
}

// The pool's connections, but a dedicated session (the release listener's) opens only after
// `delay`: the first LISTEN is in place well after the first waiter went to sleep.
class SlowToListen final : public ConnectionSource {
 public:
  SlowToListen(ConnectionSource& inner, milliseconds delay) : inner_(inner), delay_(delay) {}
  Dialect dialect() const noexcept override { return inner_.dialect(); }
  PooledConnection acquire() override { return inner_.acquire(); }  // given back to inner_
  std::string describe() const override { return inner_.describe(); }
  std::unique_ptr<Connection> open_dedicated() override {
    std::this_thread::sleep_for(delay_);
    return inner_.open_dedicated();
  }
  bool keeps_sessions() const noexcept override { return inner_.keeps_sessions(); }

 protected:
  void give_back(Connection*) noexcept override {}  // lends nothing of its own

 private:
  ConnectionSource& inner_;
  milliseconds delay_;
};

TEST_P(UniqueKeyLockTest, AReleaseMadeBeforeTheListenerListensStillWakesTheWaiter) {
  // A waiter on a fresh lock object sleeps (its polls 2 s apart) while its listener is still
  // opening its session; the holder releases through another lock object, whose notification
  // nobody in the waiter's lock object hears. Once the LISTEN is in place, the waiter must try
  // again: the key was freed unheard. Otherwise it sleeps out its 2 s.
  // MySQL has no notifications and no listener: there the waiter's next poll, 2 s after its
  // first try, is checked instead.
  const bool notified = backend().dialect == Dialect::kPostgreSQL;
  auto holder_lock = make_lock();
  auto held = holder_lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  SlowToListen slow(*pool_, milliseconds(500));
  UniqueKeyLockOptions options;
  options.tables = tables_;
  options.backoff = {milliseconds(2000), milliseconds(2000), milliseconds(2000)};
  UniqueKeyLock waiter_lock(slow, options);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lease = waiter_lock.acquire("k", milliseconds(10000), as("waiter"));
    got = lease.has_value();
    if (lease) lease->release();
  });
  std::this_thread::sleep_for(milliseconds(250));  // its first try failed; not listening yet
  const auto released_at = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - released_at);
  EXPECT_TRUE(got.load());
  std::printf("[ handoff  ] %s: the key freed %s reached the waiter in %lld ms\n",
              backend().name.c_str(), notified ? "before the LISTEN" : "(polling)",
              static_cast<long long>(waited.count()));
  if (notified) {
    EXPECT_LT(waited, milliseconds(1400))
        << "the waiter slept out its poll: the release went unheard";
  } else {
    EXPECT_LT(waited, milliseconds(3000)) << "the waiter did not poll";
  }
}

// Waiters of one lock object that sleep in acquire, each on its own thread. Polling alone is
// made slow (every backoff wait is 2 s), so a quick grant proves a hand-over or a wake-up.
class Waiters {
 public:
  Waiters(UniqueKeyLock& lock, std::string key) : lock_(lock), key_(std::move(key)) {}
  ~Waiters() {
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // Starts a waiter owned by `owner` and returns once it sleeps after its first try.
  void add(const std::string& owner, milliseconds timeout = milliseconds(10000),
           milliseconds ttl = milliseconds(30000)) {
    auto& slot = results_.emplace_back(std::make_unique<Result>());
    std::atomic<bool> started{false};
    threads_.emplace_back([this, owner, timeout, ttl, &started, &slot = *slot] {
      LockOptions options;
      options.owner = Owner::named(owner);
      options.ttl = ttl;
      started = true;
      const auto from = Clock::now();
      slot.lease = lock_.acquire(key_, timeout, options);
      slot.took = Clock::now() - from;
      slot.done = true;
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(500));  // tried once, asleep now
  }
  struct Result {
    std::optional<Lease> lease;
    Clock::duration took{};
    std::atomic<bool> done{false};
  };
  // Waiter `i`'s outcome, once it returned.
  Result& join(std::size_t i) {
    if (threads_.at(i).joinable()) threads_.at(i).join();
    return *results_.at(i);
  }
  bool done(std::size_t i) const { return results_.at(i)->done; }

 private:
  UniqueKeyLock& lock_;
  std::string key_;
  std::vector<std::unique_ptr<Result>> results_;
  std::vector<std::thread> threads_;
};

UniqueKeyLockOptions slow_polling() {
  UniqueKeyLockOptions options;
  options.backoff = {milliseconds(2000), milliseconds(2000), milliseconds(2000)};
  return options;
}

TEST_P(UniqueKeyLockTest, AReleaseHandsTheKeyToTheWaiterThatSleptLongest) {
  auto lock = make_lock(slow_polling());
  auto held = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  const std::int64_t holder_token = held->fencing_token();
  Waiters waiters(*lock, "k");
  waiters.add("w1");
  waiters.add("w2");
  const auto released_at = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  // The release's own statement moved the row to the first waiter: it is w1's as soon as the
  // release returns, with a new token, and the holder asking again at once finds it taken.
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, Owner::named("w1").thread);
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_GT(r->fencing_token, holder_token);
  EXPECT_FALSE(r->expired);
  EXPECT_FALSE(lock->try_acquire("k", as("holder")));
  auto& first = waiters.join(0);
  ASSERT_TRUE(first.lease) << "w1 was not handed the key";
  EXPECT_LT(Clock::now() - released_at, milliseconds(1500)) << "w1 waited for its poll";
  EXPECT_EQ(first.lease->fencing_token(), r->fencing_token);
  EXPECT_FALSE(first.lease->lost());
  EXPECT_FALSE(waiters.done(1)) << "w2 returned while w1 held the key";
  const std::int64_t first_token = first.lease->fencing_token();
  EXPECT_EQ(first.lease->release(), ReleaseOutcome::kReleased);
  auto& second = waiters.join(1);
  ASSERT_TRUE(second.lease) << "w2 was not handed the key";
  EXPECT_GT(second.lease->fencing_token(), first_token);
  EXPECT_EQ(row("k")->owner_thread, Owner::named("w2").thread);
  // A lease handed over is an ordinary one: renewed, released, and the key free after it.
  EXPECT_TRUE(second.lease->renew(milliseconds(30000)));
  EXPECT_EQ(second.lease->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(row("k"));
  EXPECT_TRUE(lock->try_acquire("k", as("x")));
}

TEST_P(UniqueKeyLockTest, OnlyTheReleaseThatFreesTheKeyHandsItOver) {
  // An inner release of reentrant holds leaves the key with its owner; so does the release of a
  // lease whose row another owner took after it expired. A waiter gets the key from neither.
  auto lock = make_lock(slow_polling());
  auto outer = lock->try_acquire("k", as("holder"));
  auto inner = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(outer && inner);
  Waiters waiters(*lock, "k");
  waiters.add("w1");
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, Owner::named("holder").thread);
  EXPECT_EQ(r->hold_count, 1);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(waiters.done(0)) << "the waiter returned while the outer hold was live";
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
  auto& w1 = waiters.join(0);
  ASSERT_TRUE(w1.lease);
  EXPECT_EQ(row("k")->owner_thread, Owner::named("w1").thread);
  w1.lease->release();

  // A lease that expired and was taken by another owner: its release finds nothing to hand.
  LockOptions short_lived = as("stale", milliseconds(300));
  short_lived.auto_renew = false;
  auto stale = lock->try_acquire("s", short_lived);
  ASSERT_TRUE(stale);
  std::this_thread::sleep_for(milliseconds(400));
  auto elsewhere = make_lock();
  auto taker = elsewhere->try_acquire("s", as("taker"));
  ASSERT_TRUE(taker);
  Waiters more(*lock, "s");
  more.add("w2", milliseconds(1000));
  EXPECT_EQ(stale->release(), ReleaseOutcome::kNotHeld);
  EXPECT_EQ(row("s")->owner_thread, Owner::named("taker").thread);
  EXPECT_FALSE(more.join(0).lease) << "a waiter got a key another owner holds";
}

TEST_P(UniqueKeyLockTest, AWaiterWhoseTimeRunsOutWhileTheKeyIsHandedToItTakesTheKey) {
  // The hand-over's statement waits for a row lock another transaction holds until well after
  // the waiter's timeout. The waiter must wait for that outcome and come back with the key: one
  // that gave up would leave the key held by an owner with no lease, until its TTL.
  auto lock = make_lock(slow_polling());
  auto held = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  Waiters waiters(*lock, "k");
  waiters.add("w1", milliseconds(1000));
  auto blocker = backend().connect();
  blocker->begin();
  blocker->execute("SELECT lock_key FROM " + tables_.qualified(backend().dialect, "locks") +
                   " WHERE lock_key = 'k' FOR UPDATE");
  std::thread releaser([&] { EXPECT_EQ(held->release(), ReleaseOutcome::kReleased); });
  std::this_thread::sleep_for(milliseconds(1500));  // past the waiter's timeout
  EXPECT_FALSE(waiters.done(0)) << "the waiter gave up while the key was being handed to it";
  blocker->commit();
  releaser.join();
  auto& w1 = waiters.join(0);
  ASSERT_TRUE(w1.lease) << "the key went to a waiter that had given up";
  EXPECT_GE(w1.took, milliseconds(1500));
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, Owner::named("w1").thread);
  EXPECT_EQ(r->fencing_token, w1.lease->fencing_token());
  EXPECT_FALSE(w1.lease->lost());
  EXPECT_EQ(w1.lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(UniqueKeyLockTest, AHandedOverLeaseCountsItsTtlFromTheStatementThatMovedIt) {
  // The hand-over waits for a row lock longer than the waiter's TTL: the row it writes expires a
  // TTL after the statement began, already past when it commits, so the waiter's lease must come
  // back lost (its TTL counted from when the statement was sent, not from the wake-up).
  auto lock = make_lock(slow_polling());
  auto held = lock->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  Waiters waiters(*lock, "k");
  waiters.add("w1", milliseconds(10000), milliseconds(1000));
  auto blocker = backend().connect();
  blocker->begin();
  blocker->execute("SELECT lock_key FROM " + tables_.qualified(backend().dialect, "locks") +
                   " WHERE lock_key = 'k' FOR UPDATE");
  std::thread releaser([&] { EXPECT_EQ(held->release(), ReleaseOutcome::kReleased); });
  std::this_thread::sleep_for(milliseconds(1500));
  blocker->commit();
  releaser.join();
  auto& w1 = waiters.join(0);
  ASSERT_TRUE(w1.lease);
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, Owner::named("w1").thread);
  EXPECT_TRUE(r->expired) << "the hand-over's TTL did not run from the statement's start";
  EXPECT_TRUE(w1.lease->lost()) << "lost() is false while the database grants the key to anyone";
  EXPECT_TRUE(lock->try_acquire("k", as("x")));
  EXPECT_EQ(w1.lease->release(), ReleaseOutcome::kNotHeld);
}

TEST_P(UniqueKeyLockTest, AnAcquireStormNeverThrowsAndNeverGrantsTwice) {
  // 16 threads hammer one key with one-shot tries (InnoDB answers some duplicate-key inserts
  // with deadlocks); every try must end as "acquired" or "not acquired", one holder at a time.
  auto pool = open_pool(backend().url(), {.max_size = 16});
  UniqueKeyLockOptions options;
  options.tables = tables_;
  UniqueKeyLock lock(*pool, options);
  std::atomic<int> holders{0}, max_holders{0}, acquired{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        try {
          auto lease = lock.try_acquire("storm", as("t" + std::to_string(t)));
          if (!lease) continue;
          int now = ++holders;
          int seen = max_holders.load();
          while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
          }
          ++acquired;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          --holders;
          lease->release();
        } catch (const std::exception& e) {
          ++errors;
          ADD_FAILURE() << e.what();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(max_holders.load(), 1);
  EXPECT_GT(acquired.load(), 0);
}

TEST_P(UniqueKeyLockTest, WaitingFallsBackToPollingWithoutADedicatedSession) {
  // A borrowed connection cannot open a LISTEN session: waiters poll instead.
  auto conn = backend().connect();
  auto source = borrow(*conn);
  UniqueKeyLockOptions options;
  options.tables = tables_;
  UniqueKeyLock polling(*source, options);
  auto other = make_lock();
  auto held = other->try_acquire("k", as("holder"));
  ASSERT_TRUE(held);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(300));
    held->release();
  });
  auto started = Clock::now();
  auto got = polling.acquire("k", milliseconds(5000), as("waiter"));
  releaser.join();
  EXPECT_TRUE(got);
  EXPECT_LT(Clock::now() - started, milliseconds(2000));
}

// LockOptions::min_hold: a release before it has passed leaves the key taken by no one until
// acquisition + min_hold on the database clock: not by another owner, not by the releasing
// owner's re-entry, not by a waiter handed the key; listed as finished (hold count 0); then free.
TEST_P(UniqueKeyLockTest, AReleaseBeforeTheMinimumHoldLeavesTheKeyTakenUntilThen) {
  UniqueKeyLockOptions notify;
  notify.notify = true;
  auto lock = make_lock(notify);
  LockOptions kept = as("job");
  kept.min_hold = milliseconds(1500);
  const auto acquired = std::chrono::steady_clock::now();
  auto lease = lock->try_acquire("cron", kept);
  ASSERT_TRUE(lease);
  const std::int64_t token = lease->fencing_token();
  std::optional<Lease> waited;
  std::thread waiter([&] { waited = lock->acquire("cron", milliseconds(10000), as("waiter")); });
  std::this_thread::sleep_for(milliseconds(200));  // the waiter sleeps in the lock object
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(lock->try_acquire("cron", as("other")));
  EXPECT_FALSE(lock->try_acquire("cron", kept)) << "the releasing owner re-entered a finished key";
  const auto r = row("cron");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hold_count, 0);
  EXPECT_FALSE(r->expired);
  waiter.join();
  ASSERT_TRUE(waited) << "the key never came free after its minimum hold";
  EXPECT_GE(std::chrono::steady_clock::now() - acquired, milliseconds(1500))
      << "the waiter got the key before the minimum hold had passed";
  EXPECT_GT(waited->fencing_token(), token);
  EXPECT_EQ(waited->release(), ReleaseOutcome::kReleased);
}

TEST_P(UniqueKeyLockTest, AMinimumHoldOutOfRangeIsRefused) {
  auto lock = make_lock();
  for (auto bad : {milliseconds(-1), milliseconds(std::chrono::hours(24 * 366))}) {
    LockOptions o = as("a");
    o.min_hold = bad;
    try {
      lock->try_acquire("k", o);
      ADD_FAILURE() << "min_hold " << bad.count() << " ms was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("min_hold"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(row("k") == std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Pairs, UniqueKeyLockTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
