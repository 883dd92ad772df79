// SPDX-License-Identifier: Apache-2.0
// Galera (MariaDB 10.11 + galera-4), three nodes on one machine (scripts/ha-galera.sh): clients
// spread over the nodes contend for one key, a node is killed and rejoins under load, row locks
// are shown to be node-local (and fences refused), and two migrators on two nodes run at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "contention.hpp"
#include "dblock/error.hpp"
#include "dblock/fence.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/unique_key_lock.hpp"
#include "ha_fixture.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

class Galera : public HaTest, public ::testing::WithParamInterface<std::string> {
 protected:
  ContentionOptions contention() {
    ContentionOptions o;
    o.strategy = &strategy_named(GetParam());
    o.urls = galera_urls();
    o.clients = 6;
    o.tables = tables_;
    o.key = "ha-galera";
    o.history_dir = history_dir_;
    prepare_tables(o.urls[0], tables_);
    return o;
  }

  // What every node holds once the run is over: the same lock row (or counter), and nothing
  // acknowledged missing from it.
  void expect_nodes_agree(const ContentionOptions& o, const ContentionStats& stats) {
    const auto urls = galera_urls();
    if (o.strategy->exclusive) {
      std::int64_t max_token = 0;
      for (const auto& h : load_holds(stats.histories)) max_token = std::max(max_token, h.token);
      const LockRow first = read_lock_row(urls[0], tables_, o.key);
      for (const auto& url : urls) {
        const LockRow row = read_lock_row(url, tables_, o.key);
        EXPECT_EQ(row.token, first.token) << "the nodes disagree on the lock row";
        EXPECT_EQ(row.hold_count, first.hold_count);
        EXPECT_GE(row.token, max_token) << "an acknowledged acquisition's token is missing";
        if (stats.in_doubt == 0) {
          EXPECT_EQ(row.hold_count, 0) << "a release came back";
        }
      }
    } else {
      for (const auto& url : urls) {
        const std::int64_t counter = read_counter(url, tables_);
        EXPECT_GE(counter, stats.released) << "an acknowledged commit is missing";
        EXPECT_LE(counter, stats.released + stats.in_doubt) << "a commit counted twice";
      }
    }
  }

  // Certification failures (1213 / 40001) must never reach the caller of acquire or release.
  static void expect_no_certification_errors(const ContentionStats& stats) {
    for (const char* where : {"acquire", "release"}) {
      EXPECT_EQ(stats.errors_at(where, "deadlock"), 0) << where << ": " << stats.summary();
      EXPECT_EQ(stats.errors_at(where, "serialization_failure"), 0)
          << where << ": " << stats.summary();
    }
  }
};

TEST_P(Galera, ClientsOnThreeNodesContendForOneKey) {
  const ContentionOptions o = contention();
  const int seconds = ha_seconds(10);
  const ContentionStats stats =
      run_contention(o, [&] { std::this_thread::sleep_for(1s * seconds); });
  const HistoryReport report = check_history(o, stats);
  figures("galera " + GetParam() + " " + std::to_string(seconds) + "s 3 nodes " +
          std::to_string(o.clients) + " clients: " + stats.summary() + " | " + report.summary());
  EXPECT_GT(stats.acquired, 0);
  EXPECT_TRUE(report.clean()) << report.summary();
  expect_no_certification_errors(stats);
  // No node went away: nothing at all may be thrown at a caller of acquire or release, and no
  // release may be in doubt. The critical section's own statements (optimistic: the counter
  // update in the lease's transaction) may meet a certification abort, as they would a
  // deadlock on one server; with_lock retries those.
  EXPECT_EQ(stats.in_doubt, 0) << stats.summary();
  for (const auto& [what, count] : stats.errors) {
    EXPECT_EQ(what.rfind("section:", 0), 0u) << what << "=" << count;
  }
  expect_nodes_agree(o, stats);
}

TEST_P(Galera, NodeKilledAndRejoinedUnderLoadLosesNothingAcknowledged) {
  ContentionOptions o = contention();
  const int seconds = ha_seconds(10);
  ClusterScript& cluster = galera_cluster();
  const auto started = std::chrono::steady_clock::now();
  const ContentionStats stats = run_contention(o, [&] {
    std::this_thread::sleep_for(1s * seconds / 3);
    cluster.run({"kill", "3"});  // SIGKILL
    std::this_thread::sleep_for(1s * seconds / 3);
    cluster.run({"rejoin", "3"});  // returns once node 3 is Synced again
    std::this_thread::sleep_for(1s * seconds / 3);
  });
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  const HistoryReport report = check_history(o, stats);
  figures("galera " + GetParam() + " node 3 SIGKILLed and rejoined, " +
          std::to_string(elapsed.count()) + "s: " + stats.summary() + " | " + report.summary());
  EXPECT_GT(stats.acquired, 0);
  EXPECT_TRUE(report.clean()) << report.summary();
  expect_no_certification_errors(stats);
  // The node's absence and its rejoin reach acquire as connect_failed or connection_lost,
  // never as an unclassified error (a joining node's 1047 once did).
  EXPECT_EQ(stats.errors_at("acquire", "other"), 0) << stats.summary();
  expect_nodes_agree(o, stats);
}

INSTANTIATE_TEST_SUITE_P(Strategies, Galera, ::testing::Values("unique_key", "optimistic"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

class GaleraRowLock : public HaTest {};

// SELECT ... FOR UPDATE locks rows on the local node only: two nodes grant the same key at
// once. The conflict surfaces only at COMMIT, where certification aborts one of them. So a
// RowLock refuses a Galera connection; declared single-writer (wrongly here: clients write
// through two nodes) it shows the race.
TEST_F(GaleraRowLock, RefusedOnGaleraAndNodeLocalWhenDeclaredSingleWriter) {
  const auto urls = galera_urls();
  prepare_tables(urls[0], tables_);
  RowLockOptions options;
  options.tables = tables_;
  auto pool1 = open_pool(DatabaseUrl::parse(urls[0]), {.max_size = 2});
  auto pool2 = open_pool(DatabaseUrl::parse(urls[1]), {.max_size = 2});
  {
    RowLock refusing(*pool1, options);
    try {
      refusing.try_acquire("row-refused");
      ADD_FAILURE() << "a RowLock took a row lock on a Galera node";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
      EXPECT_NE(std::string(e.what()).find("galera_single_writer"), std::string::npos) << e.what();
    }
  }
  options.galera_single_writer = true;
  RowLock lock1(*pool1, options), lock2(*pool2, options);
  int both = 0;
  int commit_errors = 0;
  const int rounds = 5;
  for (int i = 0; i < rounds; ++i) {
    const std::string key = "row-" + std::to_string(i);
    // The row exists on every node before the race (created on demand by a first acquire).
    lock1.try_acquire(key)->release();
    LockOptions a, b;
    a.owner = Owner::named("node1-client");
    b.owner = Owner::named("node2-client");
    std::optional<Lease> on1 = lock1.try_acquire(key, a);
    std::optional<Lease> on2 = lock2.try_acquire(key, b);
    if (on1 && on2) ++both;
    for (auto* lease : {&on1, &on2}) {
      if (!*lease) continue;
      try {
        (*lease)->release();
      } catch (const Error& e) {
        ++commit_errors;
        std::printf("release of a node-local row lock: %s\n", e.what());
      }
    }
  }
  figures("galera row_lock: " + std::to_string(both) + "/" + std::to_string(rounds) +
          " rounds granted the same key on two nodes at once; " + std::to_string(commit_errors) +
          " releases threw");
  EXPECT_EQ(both, rounds) << "FOR UPDATE was expected to be node-local on Galera";
}

class GaleraFence : public HaTest {};

// A share lock (FOR SHARE, LOCK IN SHARE MODE) is node-local on Galera, and reads are not
// certified: a fence on node 1 would hold back no takeover committed on node 2. fence() refuses a
// Galera node before it sends its statement, for unique-key leases and semaphore permits alike.
TEST_F(GaleraFence, RefusedOnGaleraBeforeAnythingIsLocked) {
  const auto urls = galera_urls();
  prepare_tables(urls[0], tables_);
  auto pool = open_pool(DatabaseUrl::parse(urls[0]), {.max_size = 3});
  UniqueKeyLock locks(*pool, UniqueKeyLockOptions{tables_});
  Semaphore permits(*pool, 2, SemaphoreOptions{tables_});
  std::optional<Lease> lease = locks.try_acquire("fenced");
  std::optional<Lease> permit = permits.try_acquire("fenced-permits");
  ASSERT_TRUE(lease);
  ASSERT_TRUE(permit);
  for (Lease* held : {&*lease, &*permit}) {
    auto conn = pool->acquire();
    conn->begin();
    try {
      fence(*held, *conn);
      ADD_FAILURE() << "a fence was accepted on a Galera node";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
      EXPECT_NE(std::string(e.what()).find("Galera"), std::string::npos) << e.what();
    }
    conn->rollback();
  }
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(permit->release(), ReleaseOutcome::kReleased);
}

class GaleraMigrator : public HaTest {
 protected:
  // Rows of version 0 (the cluster's migration lock) in the migrations table, read on `url`
  // once that node has applied what the cluster certified.
  static std::string lock_rows(const std::string& url, const TableNames& tables) {
    auto conn = open_connection(DatabaseUrl::parse(url));
    conn->execute("SET SESSION wsrep_sync_wait = 1");
    return *conn->execute("SELECT COUNT(*) AS n FROM " +
                          tables.qualified(Dialect::kMySQL, "schema_migrations") +
                          " WHERE version = 0")
                .at(0, "n");
  }
  // Puts a migration lock row on `url` as a migrator would, acquired `age` ago.
  static void hold_lock_row(const std::string& url, const TableNames& tables,
                            std::chrono::seconds age) {
    auto conn = open_connection(DatabaseUrl::parse(url));
    // After what the cluster certified, the delete of the last holder's row included.
    conn->execute("SET SESSION wsrep_sync_wait = 7");
    conn->execute("INSERT INTO " + tables.qualified(Dialect::kMySQL, "schema_migrations") +
                  " (version, name, checksum, applied_at) VALUES (0, 'migration lock of a test', "
                  "REPEAT('a', 32), UTC_TIMESTAMP(6) - INTERVAL " +
                  std::to_string(age.count()) + " SECOND)");
  }
};

// GET_LOCK is node-local on Galera, so the migrator also takes a lock the whole cluster sees (a
// row of the migrations table): two `migrate up` on two nodes at once must both succeed, apply
// each migration once and leave no lock row behind, and a third node must see them all applied
// right away (its reads wait for what the cluster certified: without that, 1 round in 5 once
// found the last migration missing there). Before the cluster lock, two nodes creating the same
// view at once had one of them interrupted once in 100 rounds and left hanging in the server
// ("Waiting to execute in isolation") once in the next 20.
TEST_F(GaleraMigrator, ConcurrentMigrateUpOnTwoNodesBothSucceed) {
  const auto urls = galera_urls();
  const int rounds = 20;
  int failures = 0;
  for (int i = 0; i < rounds; ++i) {
    const TableNames tables(unique_prefix());
    std::string errors[2];
    std::barrier start(2);
    auto migrate = [&](int node) {
      std::unique_ptr<Connection> conn;
      try {
        conn = open_connection(DatabaseUrl::parse(urls[node]));
      } catch (const std::exception& e) {
        errors[node] = e.what();
      }
      start.arrive_and_wait();  // also when the connection failed: the other thread waits here
      if (!conn) return;
      try {
        Migrator(*conn, tables).up();
      } catch (const std::exception& e) {
        errors[node] = e.what();
      }
    };
    std::thread t0(migrate, 0), t1(migrate, 1);
    t0.join();
    t1.join();
    for (const auto& e : errors) {
      if (e.empty()) continue;
      ++failures;
      ADD_FAILURE() << "round " << i << ": migrate up failed: " << e;
    }
    auto conn = open_connection(DatabaseUrl::parse(urls[2]));
    EXPECT_NO_THROW(Migrator(*conn, tables).verify()) << "round " << i;
    // The causal reads were for the migrator's own reads: the session's setting is back.
    EXPECT_EQ(conn->execute("SELECT @@SESSION.wsrep_sync_wait AS w").at(0, "w"), "0");
    EXPECT_EQ(lock_rows(urls[2], tables), "0") << "round " << i;
  }
  figures("galera migrator: " + std::to_string(rounds) + " rounds of two concurrent migrate up, " +
          std::to_string(failures) + " runs failed");
}

// The cluster's migration lock, held on one node, keeps a migrator on another node waiting (not
// even reading what is applied) until it is given back; meanwhile `verify()` and the status do
// not count the lock row as a migration. A lock row older than five minutes is a migrator that
// died holding it: the next migrator deletes it and goes on.
TEST_F(GaleraMigrator, TheClusterLockHeldOnOneNodeHoldsBackAMigratorOnAnother) {
  const auto urls = galera_urls();
  {
    auto conn = open_connection(DatabaseUrl::parse(urls[0]));
    Migrator(*conn, tables_).up();
  }
  hold_lock_row(urls[1], tables_, 0s);
  std::atomic<bool> done{false};
  std::string error;
  std::thread waiter([&] {
    try {
      auto conn = open_connection(DatabaseUrl::parse(urls[2]));
      Migrator(*conn, tables_).up();
    } catch (const std::exception& e) {
      error = e.what();
    }
    done = true;
  });
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(done) << "migrate up went on while another node held the migration lock";
  {
    auto conn = open_connection(DatabaseUrl::parse(urls[0]));
    EXPECT_NO_THROW(Migrator(*conn, tables_).verify());
    for (const MigrationState& s : Migrator(*conn, tables_).status()) {
      EXPECT_NE(s.version, 0) << "the lock row was listed as a migration";
    }
    conn->execute("DELETE FROM " + tables_.qualified(Dialect::kMySQL, "schema_migrations") +
                  " WHERE version = 0");
  }
  waiter.join();
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(lock_rows(urls[2], tables_), "0");

  hold_lock_row(urls[1], tables_, 301s);
  auto conn = open_connection(DatabaseUrl::parse(urls[2]));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(Migrator(*conn, tables_).up());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s) << "a stale lock row was waited out";
  EXPECT_EQ(lock_rows(urls[0], tables_), "0");
}

class GaleraDoctor : public HaTest {};

// `dblock doctor` on each node: a Galera cluster of three nodes in the primary component, and
// no guarantee that fails.
TEST_F(GaleraDoctor, EveryNodeIsAPrimaryComponentMemberOfThreeNodes) {
  const auto urls = galera_urls();
  {
    auto conn = open_connection(DatabaseUrl::parse(urls[0]));
    Migrator(*conn, tables_).up();
  }
  for (const auto& url : urls) {
    auto conn = open_connection(DatabaseUrl::parse(url));
    for (const Finding& f : check_deployment(*conn, tables_)) {
      EXPECT_NE(f.status, Finding::Status::kFailure) << f.check << ": " << f.message;
      if (f.check == "replication") {
        EXPECT_NE(f.message.find("a Galera cluster of 3 nodes"), std::string::npos) << f.message;
      }
    }
  }
}

}  // namespace
}  // namespace dblock::testing
