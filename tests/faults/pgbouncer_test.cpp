// Scenario 9: PgBouncer (the Debian package) in transaction-pooling mode between the clients
// and PostgreSQL. Neither PostgreSQL driver uses named prepared statements (libpqxx sends
// PQexecParams, SOCI one-time queries), so every lock statement passes the pooler. A LISTEN
// session cannot: the pooler hands the server connection to other clients after each
// transaction, so a URL with ?pool_mode=transaction opens no dedicated session and waiters
// poll. Afterwards no lock row is held and no server connection is left in a transaction or
// LISTENing.
#include "pgbouncer.hpp"

#include <thread>

#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "fault_fixture.hpp"
#include "recorded_holder.hpp"

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

using PgBouncerTest = FaultTest;

TEST_P(PgBouncerTest, LocksWorkThroughTransactionPoolingWaitersPollAndNothingLeaks) {
  PgBouncer bouncer(backend().url());
  const DatabaseUrl url = bouncer.through(backend().url());
  auto pool = open_pool(url, {.max_size = 4});
  EXPECT_EQ(pool->open_dedicated(), nullptr) << "a session of its own behind a pooler";
  {
    auto c = pool->acquire();
    Migrator(*c, tables_).verify();  // the migrator's reads pass the pooler too
  }
  auto lock = make_lock(*pool);
  HistoryWriter history(new_history("bouncer"));
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
      "[ pgbouncer] %s: a polling waiter got the key %lld ms after it began waiting "
      "(released after 300 ms)\n",
      backend().name.c_str(), static_cast<long long>(waited_ms));
  EXPECT_EQ(waited->release(), ReleaseOutcome::kReleased);
  ASSERT_TRUE(b.acquire(milliseconds(0)));
  EXPECT_EQ(b.release(), "released");

  // Nothing leaks: no row held, and PgBouncer's server connections are idle, none LISTENing.
  EXPECT_TRUE(list_locks(*conn_, tables_).empty());
  auto pids = bouncer.server_pids(backend().url());
  EXPECT_FALSE(pids.empty());
  for (auto pid : pids) {
    auto r = conn_->execute("SELECT state, query FROM pg_stat_activity WHERE pid = $1::int",
                            {Value(pid)});
    ASSERT_EQ(r.size(), 1u) << "server pid " << pid;
    EXPECT_EQ(r.at(0, "state"), "idle") << "server pid " << pid;
    EXPECT_EQ(r.at(0, "query").value_or("").rfind("LISTEN", 0), std::string::npos)
        << "server pid " << pid;
  }
  check_histories();
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
  listener->execute("LISTEN " + channel);
  auto notifier = open_connection(url);
  notifier->execute("SELECT pg_notify($1, 'released')", {Value(channel)});
  auto heard = listener->wait_for_notifications(milliseconds(1000));
  EXPECT_TRUE(heard.empty()) << "PgBouncer delivered a notification in transaction mode";
  // The same LISTEN on a direct session hears it: the difference is the pooler.
  auto direct = backend().connect();
  direct->execute("LISTEN " + channel);
  notifier->execute("SELECT pg_notify($1, 'released')", {Value(channel)});
  EXPECT_EQ(direct->wait_for_notifications(milliseconds(5000)).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Faults, PgBouncerTest, ::testing::ValuesIn(postgresql_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
