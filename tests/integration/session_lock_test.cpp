// SPDX-License-Identifier: Apache-2.0
// The session lock (pg_advisory_lock / GET_LOCK held by the lease's session) against every
// database x driver pair, from the guarantee's side: two owners never hold a key at once, a try
// on a held key fails fast, timed waits end near their bound, fencing tokens increase across
// acquisitions and keys, a killed holder session frees the lock and is reported lost,
// reentrancy, long keys, and refusal behind a transaction pooler.
#include "dblock/session_lock.hpp"

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "migrated_fixture.hpp"
#include "sha256.hpp"

namespace dblock::testing {
namespace {

class SessionLockTest : public MigratedLockTest<SessionLock, SessionLockOptions> {
 protected:
  SessionLockTest() : MigratedLockTest("s", 12) {}
  // The session holding `key`'s lock, asked of the server by the name the header documents
  // (computed here on its own), or -1 when no session holds it.
  std::int64_t holder_of(const std::string& key) {
    const std::string hex =
        detail::sha256_hex(tables_.schema() + '\x1f' + tables_.prefix() + '\x1f' + key);
    auto c = backend().connect();
    Result r;
    if (backend().dialect == Dialect::kPostgreSQL) {
      const auto bits = static_cast<std::int64_t>(std::stoull(hex.substr(0, 16), nullptr, 16));
      r = c->execute(
          "SELECT pid AS id FROM pg_locks WHERE locktype = 'advisory' AND granted"
          " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
          " AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint",
          {Value(static_cast<long long>(bits))});
    } else {
      r = c->execute("SELECT IS_USED_LOCK(?) AS id", {Value("dblock_" + hex.substr(0, 40))});
    }
    return r.empty() || !r.at(0, "id") ? -1 : r.int64_at(0, "id");
  }
};

TEST_P(SessionLockTest, ATryOnAHeldKeyReturnsNotAcquiredWithin50Ms) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  const std::int64_t first = held->fencing_token();
  EXPECT_GT(first, 0);
  EXPECT_GE(holder_of("k"), 0);  // the server knows the lock by the documented name
  EXPECT_TRUE(lock_->try_acquire("warm-up", as("b")));
  expect_a_try_on_the_held_key_fails_at_once("k");
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(holder_of("k"), -1);
  auto next = lock_->try_acquire("k", as("b"));
  ASSERT_TRUE(next);
  EXPECT_GT(next->fencing_token(), first);
}

// No TTL: a session lock lasts until release or until its session ends.
TEST_P(SessionLockTest, ALeaseHeldPastItsTtlIsStillHeldAndNotLost) {
  expect_held_past_its_ttl([](Lease& held) { EXPECT_TRUE(held.renew()); });
}

TEST_P(SessionLockTest, ATimedWaitEndsNearItsBound) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  for (milliseconds wait : {milliseconds(300), milliseconds(40), milliseconds(1300)}) {
    const auto start = Clock::now();
    EXPECT_FALSE(lock_->acquire("k", wait, as("b")));
    const auto took = since(start);
    EXPECT_GE(took, wait - milliseconds(20)) << wait.count();
    EXPECT_LT(took, wait + milliseconds(250)) << wait.count();  // not the next whole second
  }
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
}

// A wait that timed out gives its connection back holding nothing and with the session's own
// settings: a one-connection pool's next user can take the key, and the lock_timeout set for
// the wait did not stay behind (PostgreSQL).
TEST_P(SessionLockTest, ATimedOutWaitLeavesItsConnectionAsItWas) {
  auto one = open_pool(backend().url(), {.max_size = 1});
  SessionLock single(*one, SessionLockOptions{tables_});
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(single.acquire("k", milliseconds(100), as("b")));
  if (backend().dialect == Dialect::kPostgreSQL) {
    EXPECT_EQ(one->acquire()->execute("SHOW lock_timeout").at(0, 0), "0");
  }
  {
    auto inner = single.try_acquire("other", as("b"));
    ASSERT_TRUE(inner);
    EXPECT_EQ(inner->release(), ReleaseOutcome::kReleased);
  }
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  auto c = one->acquire();
  if (backend().dialect == Dialect::kPostgreSQL) {
    EXPECT_EQ(c->execute("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'"
                         " AND pid = pg_backend_pid()")
                  .int64_at(0, "n"),
              0);
    EXPECT_EQ(c->execute("SHOW lock_timeout").at(0, 0), "0");
  }
}

TEST_P(SessionLockTest, AWaiterGetsTheLockWhenTheHolderReleases) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  const std::int64_t first = held->fencing_token();
  auto waiter = waiter_for("k");
  std::this_thread::sleep_for(milliseconds(200));
  // A token taken by another key while the waiter waits: the waiter's, taken at the grant,
  // must be larger still.
  auto meanwhile = lock_->try_acquire("other", as("c"));
  ASSERT_TRUE(meanwhile);
  const auto released = Clock::now();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  const std::int64_t got = waiter.get();
  EXPECT_GT(got, first);
  EXPECT_GT(got, meanwhile->fencing_token());
  EXPECT_LT(since(released), milliseconds(1000));
}

// Many threads, distinct owners, one key: the critical sections never overlap, and the tokens
// in the order the holders got the lock strictly increase.
TEST_P(SessionLockTest, TwoOwnersNeverHoldAKeyAtOnce) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 25;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> done{0};
  std::mutex mu;
  std::vector<std::int64_t> tokens;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        auto lease = lock_->acquire("shared", milliseconds(20000), as("w" + std::to_string(t)));
        if (!lease) continue;
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        {
          std::lock_guard g(mu);
          tokens.push_back(lease->fencing_token());
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside.fetch_sub(1);
        if (lease->release() == ReleaseOutcome::kReleased) done.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(done.load(), kThreads * kRounds);
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(kThreads * kRounds));
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    EXPECT_GT(tokens[i], tokens[i - 1]) << i;
  }
}

TEST_P(SessionLockTest, FencingTokensIncreaseAcrossAcquisitionsAndKeys) {
  std::int64_t last = 0;
  for (const char* key : {"a", "b", "a", "c", "b", "a"}) {
    auto lease = lock_->try_acquire(key, as("x"));
    ASSERT_TRUE(lease);
    EXPECT_GT(lease->fencing_token(), last) << key;
    last = lease->fencing_token();
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  }
  // Two keys held at once get distinct tokens too.
  auto a = lock_->try_acquire("a", as("x"));
  auto b = lock_->try_acquire("b", as("y"));
  ASSERT_TRUE(a && b);
  EXPECT_GT(b->fencing_token(), a->fencing_token());
}

TEST_P(SessionLockTest, KillingTheHoldersSessionFreesTheLockAndTheLeaseIsLost) {
  auto held = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(held);
  const std::int64_t session = holder_of("k");
  ASSERT_GE(session, 0);
  std::atomic<std::int64_t> waited_ms{-1};
  auto waiter = std::async(std::launch::async, [&] {
    const auto start = Clock::now();
    auto lease = lock_->acquire("k", milliseconds(20000), as("b"));
    waited_ms = since(start).count();
    return lease ? lease->fencing_token() : std::int64_t{-1};
  });
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(held->lost());
  auto killer = backend().connect();
  const auto killed = Clock::now();
  backend().kill_session(*killer, session);
  EXPECT_GT(waiter.get(), held->fencing_token());
  EXPECT_LT(since(killed), milliseconds(1000));  // not the 20 s the waiter would allow
  EXPECT_GE(waited_ms.load(), 250);
  // The holder finds out without a statement, and release() says so.
  const auto deadline = Clock::now() + milliseconds(2000);
  while (!held->lost() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(held->lost());
  try {
    held->release();
    ADD_FAILURE() << "release on a killed session returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
  }
}

TEST_P(SessionLockTest, ReentrantForTheSameOwnerOnOneHold) {
  auto outer = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(outer);
  auto inner = lock_->acquire("k", milliseconds(100), as("a"));
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->fencing_token(), outer->fencing_token());
  EXPECT_FALSE(lock_->try_acquire("k", as("b")));
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  EXPECT_FALSE(lock_->try_acquire("k", as("b")));  // still held after the inner release
  EXPECT_GE(holder_of("k"), 0);
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(lock_->try_acquire("k", as("b")));
}

// Two leases of one owner share one hold and its connection, each used by a thread of its own.
// The reply to one lease's renewal, waiting on the hold's socket for a moment, is not the server
// ending the session: the other lease, asked all the while, must never say it is lost.
TEST_P(SessionLockTest, LostStaysFalseWhileAnotherLeaseOfTheHoldRenews) {
  auto [renewing, watched] = one_hold_twice();
  ASSERT_TRUE(renewing && watched);
  std::atomic<bool> stop{false};
  std::atomic<int> seen_lost{0};
  std::atomic<long> asked{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      if (watched->lost()) seen_lost.fetch_add(1);
      asked.fetch_add(1);
    }
  });
  int renewed = 0;
  const auto until = Clock::now() + milliseconds(1500);
  while (Clock::now() < until) {
    if (renewing->renew()) ++renewed;
  }
  stop = true;
  watcher.join();
  EXPECT_EQ(seen_lost.load(), 0) << "of " << asked.load() << " asks during " << renewed
                                 << " renewals";
  EXPECT_GT(renewed, 100);
  EXPECT_FALSE(lock_->try_acquire("k", as("b")));
  expect_inner_then_outer_release(*watched, *renewing);
}

// Two leases of one owner share one hold and its connection: renewing both at once from two
// threads takes turns on the connection instead of sending two statements over each other.
TEST_P(SessionLockTest, ReentrantLeasesRenewedFromTwoThreadsAtOnce) {
  auto [outer, inner] = one_hold_twice();
  ASSERT_TRUE(outer && inner);
  std::atomic<int> failed{0};
  auto renew_for_a_while = [&](Lease& lease) {
    for (int i = 0; i < 300; ++i) {
      try {
        if (!lease.renew()) failed.fetch_add(1);
      } catch (const Error&) {
        failed.fetch_add(1);
      }
    }
  };
  std::thread other([&] { renew_for_a_while(*inner); });
  renew_for_a_while(*outer);
  other.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_FALSE(outer->lost());
  EXPECT_FALSE(inner->lost());
  expect_inner_then_outer_release(*inner, *outer);
}

TEST_P(SessionLockTest, LongKeysDifferingInTheLastCharacterAreDifferentLocks) {
  const std::string stem(254, 'k');
  auto x = lock_->try_acquire(stem + "x", as("a"));
  ASSERT_TRUE(x);
  auto y = lock_->try_acquire(stem + "y", as("b"));
  ASSERT_TRUE(y);
  EXPECT_FALSE(lock_->try_acquire(stem + "x", as("c")));
  EXPECT_FALSE(lock_->try_acquire(stem + "y", as("c")));
  EXPECT_THROW(lock_->try_acquire(stem + "xy", as("c")), Error);  // 256: not a key
}

// The same key under another table prefix is another lock (the prefix is in the hash).
TEST_P(SessionLockTest, TheSameKeyUnderAnotherPrefixIsAnotherLock) {
  const TableNames other(tables_.prefix() + "o_");
  Migrator(*pool_->acquire(), other).up();
  SessionLock second(*pool_, SessionLockOptions{other});
  auto a = lock_->try_acquire("k", as("a"));
  ASSERT_TRUE(a);
  auto b = second.try_acquire("k", as("b"));
  EXPECT_TRUE(b);
  b.reset();
  auto c = backend().connect();
  backend().drop_tables_with_prefix(*c, other.prefix());
}

TEST_P(SessionLockTest, RefusesASourceBehindATransactionPooler) {
  const DatabaseUrl url = backend().url();
  Pool pooled(backend().dialect, [url] { return open_connection(url); },
              {.dedicated_sessions = false});
  try {
    SessionLock refused(pooled, SessionLockOptions{tables_});
    ADD_FAILURE() << "a SessionLock over a transaction pooler was built";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("UniqueKeyLock"), std::string::npos) << e.what();
  }
}

TEST_P(SessionLockTest, WithLockAndNegativeTimeouts) {
  int ran = 0;
  auto out = with_lock(*lock_, "k", milliseconds(1000), as("a"), [&](Lease& lease) {
    ++ran;
    EXPECT_FALSE(lock_->try_acquire("k", as("b")));
    return lease.fencing_token();
  });
  ASSERT_TRUE(out);
  EXPECT_GT(*out, 0);
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(lock_->try_acquire("k", as("b")));  // with_lock released it
  EXPECT_THROW(lock_->acquire("k", milliseconds(-1), as("b")), Error);
  EXPECT_THROW(lock_->try_acquire("", as("b")), Error);
}

INSTANTIATE_TEST_SUITE_P(Pairs, SessionLockTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
