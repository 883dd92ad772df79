// SPDX-License-Identifier: Apache-2.0
// PostgreSQL primary + streaming standby (scripts/ha-postgres.sh), the test playing the failover
// manager: under load the primary is stopped with no clean-up (pg_ctl stop -m immediate) and
// the standby promoted. Clients reach whichever node writes through one multi-host URL
// (target_session_attrs=read-write). With a synchronous standby nothing acknowledged is lost;
// the asynchronous run is the control that shows the loss the documentation warns about.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "contention.hpp"
#include "dblock/open.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "ha_fixture.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kProbeTtl = 60s;  // outlives the whole run: only a lost commit can free the key

// Renewals in a history file sent after `after_us`.
long renewals_after(const std::string& path, std::int64_t after_us) {
  std::ifstream in(path);
  std::string line;
  long n = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind, client, key;
    std::int64_t token = 0, sent = 0;
    if (f >> kind >> client >> key >> token >> sent && kind == "renewed" && sent > after_us) ++n;
  }
  return n;
}

class PostgresFailover : public HaTest {
 protected:
  void start(bool synchronous) {
    cluster_ = std::make_unique<ClusterScript>(
        DBLOCK_SOURCE_DIR "/scripts/ha-postgres.sh", "PG_DIR",
        synchronous ? std::vector<std::string>{} : std::vector<std::string>{"--async"});
    prepare_tables(cluster_->env("DBLOCK_HA_PG_URL1"), tables_);
    options_.strategy = &strategy_named("unique_key");
    options_.urls = {cluster_->env("DBLOCK_HA_PG_MULTI_URL")};
    options_.clients = 4;
    options_.tables = tables_;
    options_.key = "ha-pg";
    options_.ttl = 5s;
    options_.history_dir = history_dir_;
    options_.long_holder_url = options_.urls[0];
    pool_ = open_pool(DatabaseUrl::parse(options_.urls[0]), {.max_size = 4});
    UniqueKeyLockOptions lock_options;
    lock_options.tables = tables_;
    lock_ = std::make_unique<UniqueKeyLock>(*pool_, lock_options);
    probes_ = std::make_unique<HistoryWriter>(history_dir_ + "/probes.history");
  }

  std::unique_ptr<RecordedHolder> probe(const std::string& owner, const std::string& key) {
    return std::make_unique<RecordedHolder>(*lock_, *probes_, owner, key, kProbeTtl);
  }

  void fail_over() {
    cluster_->run({"kill-primary"});
    cluster_->run({"promote"});
    promoted_us_ = monotonic_us();
  }

  HistoryReport check(ContentionStats stats) {
    stats.histories.push_back(history_dir_ + "/probes.history");
    return check_history(options_, stats);
  }

  std::unique_ptr<ClusterScript> cluster_;
  ContentionOptions options_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<UniqueKeyLock> lock_;
  std::unique_ptr<HistoryWriter> probes_;
  std::int64_t promoted_us_ = 0;
};

TEST_F(PostgresFailover, SynchronousStandbyKeepsEveryAcknowledgedLock) {
  start(/*synchronous=*/true);
  // `dblock doctor` sees the synchronous standby, and refuses the standby as a lock server.
  const Finding replication =
      doctor_finding(cluster_->env("DBLOCK_HA_PG_URL1"), tables_, "replication");
  EXPECT_EQ(replication.status, Finding::Status::kOk) << replication.message;
  EXPECT_NE(replication.message.find("1 standby(s) streaming, 1 synchronous"), std::string::npos)
      << replication.message;
  const Finding standby = doctor_finding(cluster_->env("DBLOCK_HA_PG_URL2"), tables_, "writable");
  EXPECT_EQ(standby.status, Finding::Status::kFailure) << standby.message;
  EXPECT_NE(standby.advice.find("target_session_attrs=read-write"), std::string::npos)
      << standby.advice;
  const int seconds = ha_seconds(10);
  std::unique_ptr<RecordedHolder> held, released;
  std::int64_t released_token = 0;
  const ContentionStats stats = run_contention(options_, [&] {
    std::this_thread::sleep_for(1s * seconds / 2);
    // Acknowledged just before the crash: an acquisition that stays held, and a release.
    released = probe("probe-a", "probe-released");
    ASSERT_TRUE(released->acquire(5s));
    released_token = released->token();
    ASSERT_EQ(released->release(), "released");
    held = probe("probe-a", "probe-held");
    ASSERT_TRUE(held->acquire(5s));
    fail_over();
    std::this_thread::sleep_for(1s * seconds / 2);
  });
  ASSERT_TRUE(held && released) << "the probes did not run";

  // No acquisition granted twice: the acknowledged hold is still there on the new primary.
  auto other = probe("probe-b", "probe-held");
  const bool granted_twice = other->acquire(0ms);
  // No acknowledged release comes back.
  const LockRow row = read_lock_row(cluster_->env("DBLOCK_HA_PG_URL2"), tables_, "probe-released");
  // Renewals carried on against the new primary.
  const long renewed_after =
      renewals_after(history_dir_ + "/long-holder.history", promoted_us_ + 1'000'000);
  const std::string held_release = held->release();
  other.reset();
  const HistoryReport report = check(stats);
  figures("postgresql synchronous standby, 1 failover, " + std::to_string(seconds) +
          "s: " + stats.summary() + " | probe granted twice=" + std::to_string(granted_twice) +
          " released row hold_count=" + std::to_string(row.hold_count) +
          " long-holder renewals=" + std::to_string(stats.long_holder_renewals) +
          " (after failover: " + std::to_string(renewed_after) +
          ") lost=" + std::to_string(stats.long_holder_lost) + " | " + report.summary());
  EXPECT_FALSE(granted_twice) << "an acknowledged acquisition was lost in the failover";
  EXPECT_EQ(held_release, "released");
  EXPECT_EQ(row.hold_count, 0) << "an acknowledged release came back";
  EXPECT_EQ(row.token, released_token);
  EXPECT_GT(renewed_after, 0) << "renewals did not carry on against the new primary";
  EXPECT_FALSE(stats.long_holder_lost);
  EXPECT_GT(stats.acquired, 0);
  EXPECT_TRUE(report.clean()) << report.summary();
  std::int64_t max_token = 0;
  for (const auto& h : load_holds(stats.histories)) max_token = std::max(max_token, h.token);
  EXPECT_GE(read_lock_row(cluster_->env("DBLOCK_HA_PG_URL2"), tables_, options_.key).token,
            max_token)
      << "a token went back";
}

// The control: the standby is asynchronous and, to make the loss certain, stops receiving WAL
// before the acknowledged writes. After the failover the acknowledged hold is gone (a second
// owner is granted the key while the first still holds it) and an acknowledged release comes
// back (the key is held again).
TEST_F(PostgresFailover, AsynchronousStandbyLosesAcknowledgedLocks) {
  start(/*synchronous=*/false);
  // `dblock doctor` says so before the loss.
  const Finding replication =
      doctor_finding(cluster_->env("DBLOCK_HA_PG_URL1"), tables_, "replication");
  EXPECT_EQ(replication.status, Finding::Status::kFailure) << replication.message;
  EXPECT_NE(replication.message.find("1 standby(s) streaming, 0 synchronous"), std::string::npos)
      << replication.message;
  const int seconds = ha_seconds(10);
  auto released = probe("probe-a", "probe-released");
  ASSERT_TRUE(released->acquire(5s));
  cluster_->run({"wait-replayed"});
  cluster_->run({"cut-replication"});
  std::unique_ptr<RecordedHolder> held;
  std::int64_t held_token = 0;
  const ContentionStats stats = run_contention(options_, [&] {
    std::this_thread::sleep_for(1s * seconds / 2);
    ASSERT_EQ(released->release(), "released");
    held = probe("probe-a", "probe-held");
    ASSERT_TRUE(held->acquire(5s));
    held_token = held->token();
    fail_over();
    std::this_thread::sleep_for(1s * seconds / 2);
  });
  ASSERT_TRUE(held) << "the probes did not run";
  auto other = probe("probe-b", "probe-held");
  const bool granted_twice = other->acquire(0ms);
  const std::int64_t second_token = other->token();
  const LockRow row = read_lock_row(cluster_->env("DBLOCK_HA_PG_URL2"), tables_, "probe-released");
  other.reset();
  held.reset();
  const HistoryReport report = check(stats);
  figures(
      "postgresql asynchronous standby (replication cut), 1 failover, " + std::to_string(seconds) +
      "s: " + stats.summary() + " | probe granted twice=" + std::to_string(granted_twice) +
      " tokens " + std::to_string(held_token) + " then " + std::to_string(second_token) +
      " | released row hold_count=" + std::to_string(row.hold_count) + " | " + report.summary());
  EXPECT_TRUE(granted_twice) << "the control lost nothing: the scenario did not cut replication";
  EXPECT_EQ(row.hold_count, 1) << "the acknowledged release was expected to come back";
  EXPECT_FALSE(report.clean()) << "the checker must see the two holders";
}

// With the standby cut off, every commit on the primary waits for it. A cancel of that wait (a
// cancel request, as here, or a statement timeout) makes PostgreSQL report the commit as a
// success with only a WARNING, although the standby may never get it and a failover would undo
// it. dblock must not report such a commit as acquired or released: Error(kCommitInDoubt).
TEST_F(PostgresFailover, ACommitWhoseStandbyWaitIsCancelledIsInDoubt) {
  start(/*synchronous=*/true);
  const DatabaseUrl primary = DatabaseUrl::parse(cluster_->env("DBLOCK_HA_PG_URL1"));
  const std::vector<std::string> drivers = {"libpq", "libpqxx", "soci"};
  struct Locks {
    std::unique_ptr<Pool> pool;
    std::unique_ptr<UniqueKeyLock> unique;
    std::unique_ptr<RowLock> rows;
  };
  std::map<std::string, Locks> by_driver;
  for (const auto& driver : drivers) {
    DatabaseUrl url = primary;
    url.driver = driver;
    Locks& l = by_driver[driver];
    l.pool = open_pool(url, {.max_size = 2});
    UniqueKeyLockOptions unique_options;
    unique_options.tables = tables_;
    l.unique = std::make_unique<UniqueKeyLock>(*l.pool, unique_options);
    RowLockOptions row_options;
    row_options.tables = tables_;
    l.rows = std::make_unique<RowLock>(*l.pool, row_options);
    l.rows->try_acquire("doubt-row-" + driver)->release();  // the row exists before the cut
  }
  cluster_->run({"cut-replication"});
  auto admin = open_connection(primary);
  // Cancels the waits for the standby until `done`; how many it cancelled.
  auto cancel_waits_until = [&](const std::atomic<bool>& done) {
    int cancelled = 0;
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (!done && std::chrono::steady_clock::now() < give_up) {
      Result r = admin->execute(
          "SELECT pg_cancel_backend(pid)::text AS c FROM pg_stat_activity"
          " WHERE wait_event = 'SyncRep'");
      cancelled += static_cast<int>(r.size());
      std::this_thread::sleep_for(100ms);
    }
    return cancelled;
  };
  auto outcome_of = [&](const std::function<void()>& fn) {
    std::atomic<bool> done{false};
    std::optional<ErrorCode> error;
    std::string message = "returned";
    std::thread t([&] {
      try {
        fn();
      } catch (const Error& e) {
        error = e.code();
        message = e.what();
      }
      done = true;
    });
    const int cancelled = cancel_waits_until(done);
    t.join();
    std::printf("[ in doubt ] %d wait(s) cancelled: %s\n", cancelled, message.c_str());
    EXPECT_GT(cancelled, 0) << "no commit waited for the standby";
    return error;
  };

  for (const auto& driver : drivers) {
    SCOPED_TRACE(driver);
    Locks& l = by_driver[driver];
    // A unique-key acquire is an autocommit INSERT: its commit waits.
    EXPECT_EQ(outcome_of([&] { l.unique->try_acquire("doubt-key-" + driver); }),
              ErrorCode::kCommitInDoubt);
    // A row lock's release is its COMMIT.
    EXPECT_EQ(outcome_of([&] {
                auto lease = l.rows->try_acquire("doubt-row-" + driver);
                if (lease) lease->release();
              }),
              ErrorCode::kCommitInDoubt);
  }
  figures(
      "postgresql synchronous standby cut off: cancelled commit waits reported as "
      "commit_in_doubt (unique-key acquire, row-lock release; libpq, libpqxx and SOCI)");
}

// The multi-host form libpq documents, postgresql://u:p@h1:p1,h2:p2/db, must either keep both
// hosts with their ports or be refused; reading "h1:p1,h2" as one host and p2 as the port
// silently connects to the second node only.
TEST(PostgresUrl, MultiHostAuthorityIsNotMisread) {
  const std::string text =
      "postgresql://u:p@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write";
  std::optional<DatabaseUrl> url;
  try {
    url = DatabaseUrl::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return;  // refused with a message: acceptable
  }
  EXPECT_EQ(url->host.find(':'), std::string::npos)
      << "parsed as host '" << url->host << "' port " << url->port;
}

}  // namespace
}  // namespace dblock::testing
