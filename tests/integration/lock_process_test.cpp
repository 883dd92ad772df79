// SPDX-License-Identifier: Apache-2.0
// The unique-key lock across processes, against every database x driver pair: mutual exclusion
// of a non-atomic counter update, a holder killed with SIGKILL, a holder paused past its TTL,
// and client clocks hours off (faketime). The other processes run tests/integration/
// lock_worker.cpp.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "process.hpp"
#include "skewed_clock.hpp"

namespace dblock::testing {
namespace {

class LockProcessTest : public MigratedPoolTest {
 protected:
  LockProcessTest() : MigratedPoolTest("p", 4) {}
  void SetUp() override {
    MigratedPoolTest::SetUp();
    url_ = std::getenv(backend().url_env.c_str());
    url_ += (url_.find('?') == std::string::npos ? "?" : "&") + std::string("driver=") +
            backend().driver;
  }
  std::unique_ptr<UniqueKeyLock> make_lock() {
    UniqueKeyLockOptions o;
    o.tables = tables_;
    return std::make_unique<UniqueKeyLock>(*pool_, o);
  }
  std::vector<std::string> hold_argv(const std::string& key, int ttl_ms) const {
    return {DBLOCK_LOCK_WORKER_PATH, "hold", url_, tables_.prefix(), key, std::to_string(ttl_ms)};
  }
  static std::int64_t token_in(const std::string& output) {
    auto pos = output.find("token ");
    return pos == std::string::npos ? -1 : std::stoll(output.substr(pos + 6));
  }

  std::string url_;
};

struct Interval {
  std::int64_t token, start, end;
};

// 8 processes x 4 threads increment a counter with a non-atomic read - sleep - write under the
// lock of `strategy` (lock_worker's STRATEGY); the count must be exact and the recorded critical
// sections must neither overlap nor see fencing tokens go backwards.
void expect_mutual_exclusion(const Backend& backend, Pool& pool, const TableNames& tables,
                             const std::string& base_url, const std::string& strategy) {
  // Under the sanitizers (scripts/test.sh --sanitize sets DBLOCK_TEST_QUICK), every process runs
  // several times slower: a smaller run still takes every path, in a CI-sized time.
  const bool quick = std::getenv("DBLOCK_TEST_QUICK") != nullptr;
  const int kProcesses = quick ? 4 : 8, kThreads = quick ? 2 : 4, kTotal = quick ? 200 : 1000;
  const std::string counter = tables.qualified(backend.dialect, "counter");
  {
    auto c = pool.acquire();
    c->execute("CREATE TABLE " + counter + " (id INT PRIMARY KEY, n BIGINT NOT NULL)");
    c->execute("INSERT INTO " + counter + " (id, n) VALUES (1, 0)");
  }
  // One file per process: appends from several processes could interleave mid-line.
  std::vector<std::filesystem::path> outs;
  std::vector<std::unique_ptr<ChildProcess>> children;
  // 1,000 critical sections of 3 commits each: on PostgreSQL, skip the WAL flush wait per
  // commit (synchronous_commit=off) so the run takes seconds, not a minute. Mutual exclusion
  // does not depend on durability; the crash tests keep full durability.
  std::string url = base_url;
  if (backend.dialect == Dialect::kPostgreSQL) url += "&options=-c%20synchronous_commit%3Doff";
  int assigned = 0;
  for (int p = 0; p < kProcesses; ++p) {
    int per_thread = (kTotal - assigned) / ((kProcesses - p) * kThreads);
    assigned += per_thread * kThreads;
    outs.push_back(std::filesystem::temp_directory_path() / (unique_name("intervals") + ".txt"));
    children.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{DBLOCK_LOCK_WORKER_PATH, "count", url, tables.prefix(),
                                 "counter-lock", counter, std::to_string(kThreads),
                                 std::to_string(per_thread), outs.back().string(), strategy},
        std::map<std::string, std::string>{}));
  }
  ASSERT_EQ(assigned, kTotal);
  for (auto& child : children) {
    auto r = child->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  auto c = pool.acquire();
  EXPECT_EQ(c->execute("SELECT n FROM " + counter + " WHERE id = 1").int64_at(0, "n"), kTotal);

  std::vector<Interval> intervals;
  for (const auto& out : outs) {
    std::ifstream in(out);
    for (Interval i; in >> i.token >> i.start >> i.end;) intervals.push_back(i);
    std::filesystem::remove(out);
  }
  ASSERT_EQ(intervals.size(), static_cast<std::size_t>(kTotal));
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int overlaps = 0, token_inversions = 0;
  for (std::size_t i = 1; i < intervals.size(); ++i) {
    if (intervals[i].start < intervals[i - 1].end) ++overlaps;
    if (intervals[i].token <= intervals[i - 1].token) ++token_inversions;
  }
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(token_inversions, 0);
}

TEST_P(LockProcessTest, MutualExclusionOfANonAtomicCounterAcrossProcesses) {
  expect_mutual_exclusion(backend(), *pool_, tables_, url_, "unique");
}

TEST_P(LockProcessTest, RowLocksKeepMutualExclusionAcrossProcesses) {
  expect_mutual_exclusion(backend(), *pool_, tables_, url_, "row");
}

TEST_P(LockProcessTest, SessionLocksKeepMutualExclusionAcrossProcesses) {
  expect_mutual_exclusion(backend(), *pool_, tables_, url_, "session");
}

TEST_P(LockProcessTest, AKilledHoldersLockIsTakenAfterItsTtl) {
  constexpr int kTtlMs = 1000;
  ChildProcess holder(hold_argv("job", kTtlMs), {});
  ASSERT_TRUE(holder.wait_for_output("token ", milliseconds(10000))) << holder.output_so_far();
  auto held_token = token_in(holder.output_so_far());
  auto lock = make_lock();
  EXPECT_FALSE(lock->try_acquire("job"));
  holder.signal(SIGKILL);
  auto killed_at = Clock::now();
  holder.wait();
  auto lease = lock->acquire("job", milliseconds(10000));
  auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - killed_at);
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->fencing_token(), held_token);
  // The row expires at most one TTL after the holder's last renewal; then one backoff wait.
  EXPECT_LE(took.count(), kTtlMs + 500 + 250) << "took " << took.count() << " ms";
  std::printf("[ sigkill  ] %s: lock taken %lld ms after the holder was killed (TTL %d ms)\n",
              backend().name.c_str(), static_cast<long long>(took.count()), kTtlMs);
}

TEST_P(LockProcessTest, APausedHolderFindsItsLeaseLostAndTouchesNothing) {
  constexpr int kTtlMs = 1000;
  ChildProcess holder(hold_argv("job", kTtlMs), {});
  ASSERT_TRUE(holder.wait_for_output("token ", milliseconds(10000))) << holder.output_so_far();
  auto stale_token = token_in(holder.output_so_far());
  holder.signal(SIGSTOP);
  auto lock = make_lock();
  auto lease = lock->acquire("job", milliseconds(10000));
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->fencing_token(), stale_token);
  holder.signal(SIGCONT);
  holder.signal(SIGUSR1);
  auto r = holder.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("renew=0 release=not_held lost=1"), std::string::npos) << r.out;
  auto c = pool_->acquire();
  auto rows = list_locks(*c, tables_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].fencing_token, lease->fencing_token());
  EXPECT_EQ(rows[0].owner_thread, Owner::current_thread().thread);
  EXPECT_EQ(rows[0].hold_count, 1);
  c.reset();
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(LockProcessTest, ClientClocksHoursOffChangeNothing) {
  ASSERT_TRUE(libfaketime_installed()) << "libfaketime is missing: run scripts/install-deps.sh";
  for (const std::string offset : {"+5h", "-5h"}) {
    ChildProcess holder(hold_argv("clock-" + offset, 1500), wall_clock_off_by(offset));
    ASSERT_TRUE(holder.wait_for_output(" wall ", milliseconds(10000))) << holder.output_so_far();
    // The holder's clock really is off by the offset.
    EXPECT_NEAR(printed_wall_clock_skew(holder.output_so_far()),
                offset[0] == '+' ? 18000.0 : -18000.0, 60.0);
    auto lock = make_lock();
    EXPECT_FALSE(lock->try_acquire("clock-" + offset)) << offset;
    std::this_thread::sleep_for(milliseconds(2500));  // past the TTL: kept only by renewal
    EXPECT_FALSE(lock->try_acquire("clock-" + offset)) << offset;
    auto c = pool_->acquire();
    auto rows = list_locks(*c, tables_);
    c.reset();
    ASSERT_EQ(rows.size(), 1u) << offset;
    EXPECT_FALSE(rows[0].expired) << offset;
    EXPECT_EQ(rows[0].owner_thread, "name:worker");
    holder.signal(SIGUSR1);
    auto r = holder.wait();
    EXPECT_NE(r.out.find("renew=1 release=released lost=0"), std::string::npos)
        << offset << ": " << r.out << r.err;
    EXPECT_TRUE(lock->try_acquire("clock-" + offset)) << offset;
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, LockProcessTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
