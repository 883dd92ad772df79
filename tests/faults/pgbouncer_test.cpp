// SPDX-License-Identifier: Apache-2.0
// Scenario 9: PgBouncer (the Debian package) in transaction-pooling mode between the clients
// and PostgreSQL. Neither PostgreSQL driver uses named prepared statements (libpqxx sends
// PQexecParams, SOCI one-time queries), so every lock statement passes the pooler. A LISTEN
// session cannot: the pooler hands the server connection to other clients after each
// transaction, so a URL with ?pool_mode=transaction opens no dedicated session and waiters
// poll. Afterwards no lock row is held and no server connection is left in a transaction or
// LISTENing.
//
// The transactional strategies hold a server transaction for the life of a lease, and
// transaction pooling keeps a server connection with its client for exactly that long, so they
// work through the pooler as they do without it: a row-lock waiter waits in the server's lock
// queue (lock_timeout), with nothing to poll; optimistic with_lock increments from several
// threads end exact. A session lock holds its lock in the session itself, which the pooler does
// not keep: the strategy refuses the pooler (kFailedPrecondition) in its constructor.
#include "pgbouncer.hpp"

#include <atomic>
#include <future>
#include <thread>

#include "dblock/error.hpp"
#include "dblock/fence.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "fault_fixture.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

std::vector<FaultCase> postgresql_cases() {
  std::vector<FaultCase> out;
  for (const auto& strategy : fault_strategies()) {
    for (const auto& backend : all_backends()) {
      if (backend.dialect == Dialect::kPostgreSQL) out.push_back(FaultCase{backend, strategy});
    }
  }
  return out;
}

class PgBouncerTest : public FaultTest {
 protected:
  // No lock row is held, and PgBouncer's server connections are idle (none in a transaction),
  // none LISTENing, none holding a session lock.
  void expect_nothing_leaks(const PgBouncer& bouncer) {
    if (!strategy().transactional && strategy().lock_row) {
      EXPECT_TRUE(strategy().list_rows(*conn_, tables_).empty());
    }
    auto pids = bouncer.server_pids(backend().url());
    EXPECT_FALSE(pids.empty());
    for (auto pid : pids) {
      auto r = conn_->execute("SELECT state, query FROM pg_stat_activity WHERE pid = $1::int",
                              {Value(pid)});
      ASSERT_EQ(r.size(), 1u) << "server pid " << pid;
      EXPECT_EQ(r.at(0, "state"), "idle") << "server pid " << pid;
      EXPECT_EQ(r.at(0, "query").value_or("").rfind("LISTEN", 0), std::string::npos)
          << "server pid " << pid;
      EXPECT_EQ(conn_
                    ->execute("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory'"
                              " AND pid = $1::int",
                              {Value(pid)})
                    .int64_at(0, "n"),
                0)
          << "server pid " << pid << " holds a session lock";
    }
  }

  // 4 threads x 25 with_lock increments of one key: the counter ends at exactly 100.
  void optimistic_increments_are_exact(Lock& lock, HistoryWriter& history) {
    constexpr int kThreads = 4, kEach = 25;
    std::atomic<int> attempts{0}, conflicts{0}, failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const std::string client = "t" + std::to_string(t);
        for (int i = 0; i < kEach; ++i) {
          LockAttempts tries;
          std::int64_t version = 0;
          std::int64_t sent = 0;
          try {
            auto done = with_lock(
                lock, "k", milliseconds(5000), {},
                [&](Lease& lease) {
                  version = lease.fencing_token();
                  increment_counter(*lease.connection(), tables_, client);
                  sent = monotonic_us();
                },
                &tries);
            if (done) {
              // The committed attempt, for the one-commit-per-version check.
              history.acquired(client, "k", version, sent, sent, 0);
              history.released(client, "k", version, sent, "released");
            } else {
              ++failures;
            }
          } catch (const Error& e) {
            ++failures;
            ADD_FAILURE() << client << ": " << e.what();
          }
          attempts += tries.attempts;
          conflicts += tries.conflicts;
        }
      });
    }
    for (auto& t : threads) t.join();
    // A call that used up its retries (a busy machine) commits nothing: that is the retry
    // budget, not a lost update. Every commit must count exactly once.
    EXPECT_LE(failures.load(), kThreads * kEach / 10) << "with_lock gave up too often";
    EXPECT_EQ(counter(), kThreads * kEach - failures.load())
        << "an update was lost or applied twice";
    std::printf(
        "[ pgbouncer] %s: %d optimistic increments through the pooler, counter %lld, "
        "%d attempts, %d conflicts retried\n",
        backend().name.c_str(), kThreads * kEach, static_cast<long long>(counter()),
        attempts.load(), conflicts.load());
  }
};

TEST_P(PgBouncerTest, LocksWorkThroughTransactionPoolingWaitersPollAndNothingLeaks) {
  PgBouncer bouncer(backend().url());
  const DatabaseUrl url = bouncer.through(backend().url());
  auto pool = open_pool(url, {.max_size = 4});
  EXPECT_EQ(pool->open_dedicated(), nullptr) << "a session of its own behind a pooler";
  {
    auto c = pool->acquire();
    Migrator(*c, tables_).verify();  // the migrator's reads pass the pooler too
  }
  if (strategy().held_by_session()) {
    not_applicable(
        "a session lock lives in the server session, which the transaction pooler lends to "
        "other clients between transactions (the unlock could run on another session and the "
        "lock stay behind), so the strategy refuses the pooler; checked that its constructor "
        "throws kFailedPrecondition before anything is locked, that the same strategy on a "
        "direct connection works, and that nothing leaks");
    EXPECT_EQ(error_of([&] { make_lock(*pool); }, "a lock behind the pooler"),
              ErrorCode::kFailedPrecondition);
    auto direct = make_lock();
    LockOptions me;
    me.owner = Owner::named("direct");
    auto lease = direct->try_acquire("k", me);
    ASSERT_TRUE(lease) << "the strategy does not work without the pooler either";
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    expect_nothing_leaks(bouncer);
    return;
  }
  auto lock = make_lock(*pool);
  HistoryWriter history(new_history("bouncer"));
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases neither wait nor exclude, so there is no waiter to fall back to "
        "polling; checked instead that with_lock increments from 4 threads through the pooler "
        "are exact and that nothing leaks");
    optimistic_increments_are_exact(*lock, history);
    expect_nothing_leaks(bouncer);
    check_histories();
    return;
  }
  RecordedHolder a(*lock, history, "a", "k", milliseconds(900));
  ASSERT_TRUE(a.acquire(milliseconds(0)));
  RecordedHolder b(*lock, history, "b", "k", milliseconds(30000));
  EXPECT_FALSE(b.acquire(milliseconds(0)));
  std::this_thread::sleep_for(milliseconds(1200));  // renewals through the pooler keep it
  EXPECT_FALSE(a.lost());
  EXPECT_FALSE(b.acquire(milliseconds(0)));

  // A waiter through the pooler: no notification can reach it, so it polls (backoff).
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(a.release(), "released");
  });
  LockOptions waiter;
  waiter.owner = Owner::named("waiter");
  const auto started = monotonic_us();
  auto waited = lock->acquire("k", milliseconds(5000), waiter);
  const auto waited_ms = (monotonic_us() - started) / 1000;
  releaser.join();
  ASSERT_TRUE(waited);
  EXPECT_LT(waited_ms, 1500);
  std::printf(
      "[ pgbouncer] %s: a %s waiter got the key %lld ms after it began waiting "
      "(released after 300 ms)\n",
      backend().name.c_str(), strategy().transactional ? "server-queued (lock_timeout)" : "polling",
      static_cast<long long>(waited_ms));
  if (strategy().transactional) {
    // The critical section's write passes the pooler in the lease's transaction.
    EXPECT_EQ(increment_counter(*waited->connection(), tables_, "waiter"), 1u);
  }
  EXPECT_EQ(waited->release(), ReleaseOutcome::kReleased);
  if (strategy().transactional) {
    EXPECT_EQ(counter(), 1);
  }
  ASSERT_TRUE(b.acquire(milliseconds(0)));
  EXPECT_EQ(b.release(), "released");
  expect_nothing_leaks(bouncer);
  check_histories();
}

// A fenced transaction (dblock/fence.hpp) through the pooler: the fence and the write share the
// transaction, so the pooler keeps one server connection for both, and a takeover of the key
// after the lease's TTL waits for the fenced commit; a fence once the key was taken over is
// refused and writes nothing.
TEST_P(PgBouncerTest, AFencedTransactionThroughThePoolerHoldsTheTakeoverBack) {
  const std::string& name = strategy().name;
  if (name != "unique_key" && name != "unique_key_fair" && name != "semaphore") {
    not_applicable("fence() sends a statement for unique-key leases and semaphore permits only");
    return;
  }
  PgBouncer bouncer(backend().url());
  auto pool = open_pool(bouncer.through(backend().url()), {.max_size = 4});
  auto lock = make_lock(*pool);
  LockOptions short_lived;
  short_lived.owner = Owner::named("a");
  short_lived.ttl = milliseconds(500);
  short_lived.auto_renew = false;
  auto lease = lock->try_acquire("k", short_lived);
  ASSERT_TRUE(lease);
  auto conn = pool->acquire();
  conn->begin();
  fence(*lease, *conn);
  EXPECT_EQ(increment_counter(*conn, tables_, "a"), 1u);
  std::this_thread::sleep_for(milliseconds(800));  // past the lease's TTL
  LockOptions next;
  next.owner = Owner::named("b");
  auto taken =
      std::async(std::launch::async, [&] { return lock->acquire("k", milliseconds(10000), next); });
  EXPECT_EQ(taken.wait_for(milliseconds(1000)), std::future_status::timeout)
      << "the key was taken over while a fenced transaction was open";
  conn->commit();
  conn.reset();
  auto b = taken.get();
  ASSERT_TRUE(b);
  EXPECT_GT(b->fencing_token(), lease->fencing_token());
  auto again = pool->acquire();
  again->begin();
  EXPECT_EQ(error_of([&] { fence(*lease, *again); }, "a fence once the key was taken over"),
            ErrorCode::kLeaseLost);
  again->rollback();
  again.reset();
  EXPECT_EQ(counter(), 1);
  EXPECT_EQ(b->release(), ReleaseOutcome::kReleased);
  expect_nothing_leaks(bouncer);
}

// Why the pooler needs saying: a LISTEN sent through it (by a client that believes it has a
// session) lands on a server connection that the pooler lends to other clients afterwards;
// notifications never reach the listener.
TEST_P(PgBouncerTest, ALISTENThroughTheTransactionPoolerHearsNothing) {
  PgBouncer bouncer(backend().url());
  DatabaseUrl url = bouncer.through(backend().url());
  url.transaction_pooler = false;  // a client that was not told
  auto listener = open_connection(url);
  ASSERT_TRUE(listener->supports_notifications());
  const std::string channel = tables_.prefix() + "channel";
  listener->listen(channel);
  auto notifier = open_connection(url);
  notifier->execute("SELECT pg_notify($1, 'released')", {Value(channel)});
  auto heard = listener->wait_for_notifications(milliseconds(1000));
  EXPECT_TRUE(heard.empty()) << "PgBouncer delivered a notification in transaction mode";
  // The same LISTEN on a direct session hears it: the difference is the pooler.
  auto direct = backend().connect();
  direct->listen(channel);
  notifier->execute("SELECT pg_notify($1, 'released')", {Value(channel)});
  EXPECT_EQ(direct->wait_for_notifications(milliseconds(5000)).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Faults, PgBouncerTest, ::testing::ValuesIn(postgresql_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
