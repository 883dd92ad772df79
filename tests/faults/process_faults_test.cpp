// SPDX-License-Identifier: Apache-2.0
// Scenarios 1, 2 and 7: a holder process killed with SIGKILL, a holder paused past its TTL and
// resumed, and holders whose wall clock is two hours off (faketime). The holders are
// fault_worker processes; every client's history is checked (mutual exclusion, or one commit
// per version for the optimistic strategy). Transactional holders (row lock, optimistic) write
// in their lease's transaction (fault_worker.cpp), so each test also checks which of those
// writes were committed.
#include <signal.h>

#include <thread>

#include "dblock/lock_table.hpp"
#include "dblock/unique_key_lock.hpp"
#include "fault_fixture.hpp"
#include "process.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"
#include "skewed_clock.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

std::int64_t token_in(const std::string& output) {
  auto pos = output.find("token ");
  return pos == std::string::npos ? -1 : std::stoll(output.substr(pos + 6));
}

class ProcessFaultTest : public FaultTest {
 protected:
  // The critical section of a transactional lease held by `holder`: increments the counter in
  // the lease's transaction. Then releases; returns the outcome.
  std::string increment_and_release(RecordedHolder& holder, const std::string& writer) {
    EXPECT_EQ(
        holder.in_transaction([&](Connection& c) { return increment_counter(c, tables_, writer); }),
        1u);
    return holder.release();
  }
};

// How much later than its TTL a dead holder's lease may be taken over on a busy machine.
constexpr int kSlackMs = 2000;

// Scenario 1. The lease of a killed holder is taken over once its TTL has run out; a row lock or
// a session lock is freed by the server at once (strategy().ends_with_ttl false), and a row
// lock holder's uncommitted write is rolled back. Optimistic leases exclude nobody: the killed
// holder's write is rolled back and a writer that read the same version commits at once.
TEST_P(ProcessFaultTest, AHolderKilledWithSigkillIsReplacedWhenItsLeaseEnds) {
  constexpr int kTtlMs = 1000;
  const auto holder_history = new_history("holder");
  ChildProcess holder(worker_argv("hold", "job", kTtlMs, holder_history, "holder"), {});
  ASSERT_TRUE(holder.wait_for_output("token ", milliseconds(15000))) << holder.output_so_far();
  const auto held_token = token_in(holder.output_so_far());
  auto lock = make_lock();
  HistoryWriter history(new_history("taker"));
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases exclude nobody, so a killed holder keeps nobody out; checked instead "
        "that its uncommitted write is rolled back and that a writer who read the same version "
        "commits at once");
    RecordedHolder taker(*lock, history, "taker", "job", milliseconds(30000));
    ASSERT_TRUE(taker.acquire(milliseconds(0)));
    EXPECT_EQ(taker.token(), held_token) << "both read the same version";
    holder.signal(SIGKILL);
    const auto killed_at = monotonic_us();
    holder.wait();
    EXPECT_EQ(increment_and_release(taker, "taker"), "released");
    const auto took_ms = (monotonic_us() - killed_at) / 1000;
    EXPECT_LE(took_ms, kSlackMs);
    EXPECT_EQ(rows_written_by("holder"), 0) << "the killed holder's write was committed";
    EXPECT_EQ(counter(), 1);
    EXPECT_EQ(writer(), "taker");
    std::printf("[ sigkill  ] %s: the next writer committed %lld ms after SIGKILL\n",
                backend().name.c_str(), static_cast<long long>(took_ms));
    check_histories();
    return;
  }
  {
    RecordedHolder early(*lock, history, "early", "job", milliseconds(30000));
    EXPECT_FALSE(early.acquire(milliseconds(0)));
  }
  holder.signal(SIGKILL);
  const auto killed_at = monotonic_us();
  holder.wait();
  RecordedHolder taker(*lock, history, "taker", "job", milliseconds(30000));
  ASSERT_TRUE(taker.acquire(milliseconds(10000)));
  const auto took_ms = (monotonic_us() - killed_at) / 1000;
  EXPECT_GT(taker.token(), held_token);
  // The lease ends one TTL after the holder's last renewal (not before: the history check), and
  // the next try takes it. The bound is loose because the machine may be busy with other tests.
  const int limit_ms = (strategy().ends_with_ttl ? kTtlMs : 0) + kSlackMs;
  EXPECT_LE(took_ms, limit_ms);
  std::printf("[ sigkill  ] %s: lock taken %lld ms after SIGKILL (%s)\n", backend().name.c_str(),
              static_cast<long long>(took_ms),
              strategy().ends_with_ttl ? ("TTL " + std::to_string(kTtlMs) + " ms").c_str()
                                       : "no TTL: the server ended the holder's session");
  if (strategy().transactional) {
    EXPECT_EQ(rows_written_by("holder"), 0) << "the killed holder's write was committed";
    EXPECT_EQ(increment_and_release(taker, "taker"), "released");
    EXPECT_EQ(counter(), 1);
  } else {
    EXPECT_EQ(taker.release(), "released");
  }
  check_histories();
}

// Scenario 2. A holder stopped (SIGSTOP) past its TTL and resumed: the new holder has a higher
// token; the stale holder's fenced write, renew and release change nothing and say "lost".
// Without a TTL (row lock, session lock) the paused holder keeps its lock; optimistic leases
// exclude nobody, so the paused holder resumes after another writer committed and must lose the
// compare-and-set.
TEST_P(ProcessFaultTest, APausedHolderWakesUpToALostLeaseAndChangesNothing) {
  constexpr int kTtlMs = 1000;
  ChildProcess holder(worker_argv("hold", "job", kTtlMs, new_history("stale"), "stale"), {});
  ASSERT_TRUE(holder.wait_for_output("token ", milliseconds(15000))) << holder.output_so_far();
  const auto stale_token = token_in(holder.output_so_far());
  holder.signal(SIGSTOP);
  auto lock = make_lock();
  HistoryWriter history(new_history("fresh"));
  if (!strategy().ends_with_ttl) {
    RecordedHolder fresh(*lock, history, "fresh", "job", milliseconds(30000));
    if (strategy().exclusive) {
      not_applicable(
          strategy().transactional
              ? "row locks have no TTL: a paused holder keeps its lock; checked instead that "
                "nobody else is granted it while the holder is stopped for 1.5 TTLs, that the "
                "holder, resumed, still commits its write, and that its lease never reports lost"
              : "session locks have no TTL: a paused holder keeps its lock while its session "
                "lives; checked instead that nobody else is granted it while the holder is "
                "stopped for 1.5 TTLs, that the holder, resumed, still makes its fenced write "
                "and releases, and that its lease never reports lost");
      std::this_thread::sleep_for(milliseconds(kTtlMs * 3 / 2));
      EXPECT_FALSE(fresh.acquire(milliseconds(0)));
      EXPECT_FALSE(lock->acquire("job", milliseconds(300))) << "a timed wait got the lock";
    } else {
      not_applicable(
          "optimistic leases have no TTL and exclude nobody: checked instead that a holder "
          "paused for 1.5 TTLs, resumed after another writer committed, gets kConflict and "
          "none of its writes is applied");
      ASSERT_TRUE(fresh.acquire(milliseconds(0)));
      EXPECT_EQ(fresh.token(), stale_token) << "both read the same version";
      std::this_thread::sleep_for(milliseconds(kTtlMs * 3 / 2));
      EXPECT_EQ(increment_and_release(fresh, "fresh"), "released");
    }
    holder.signal(SIGCONT);
    holder.signal(SIGUSR1);
    auto r = holder.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("lost_at"), std::string::npos) << "a lease without a TTL reported lost";
    const std::string outcome = strategy().exclusive ? "released" : "conflict";
    EXPECT_NE(r.out.find("fenced=1 renew=1 release=" + outcome + " lost=0"), std::string::npos)
        << r.out;
    if (strategy().transactional) {
      EXPECT_EQ(counter(), 1);
      EXPECT_EQ(rows_written_by("stale"), strategy().exclusive ? 2 : 0);  // counter and mark
    } else {
      EXPECT_EQ(counter(), stale_token);  // the fenced write
    }
    EXPECT_EQ(writer(), strategy().exclusive ? "stale" : "fresh");
    if (strategy().exclusive) {
      ASSERT_TRUE(fresh.acquire(milliseconds(0)));
      EXPECT_GT(fresh.token(), stale_token);
      EXPECT_EQ(fresh.release(), "released");
    }
    check_histories();
    return;
  }
  RecordedHolder fresh(*lock, history, "fresh", "job", milliseconds(30000));
  ASSERT_TRUE(fresh.acquire(milliseconds(10000)));
  EXPECT_GT(fresh.token(), stale_token);
  EXPECT_EQ(fenced_write(fresh.token(), "fresh"), 1u);
  holder.signal(SIGCONT);
  holder.signal(SIGUSR1);
  auto r = holder.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fenced=0 renew=0 release=not_held lost=1"), std::string::npos) << r.out;
  auto rows = strategy().list_rows(*conn_, tables_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].fencing_token, fresh.token());
  EXPECT_EQ(rows[0].owner_thread, "name:fresh");
  EXPECT_EQ(rows[0].hold_count, 1);
  auto writer = conn_->execute("SELECT writer FROM " +
                               tables_.qualified(backend().dialect, "resource") + " WHERE id = 1");
  EXPECT_EQ(writer.at(0, "writer"), "fresh");
  EXPECT_EQ(fresh.release(), "released");
  check_histories();
}

// A waiter of another process, stopped (SIGSTOP) while it waits and killed after the holder
// released: whatever the release gave it, the key comes back to the living. A queueing strategy
// on PostgreSQL grants the key to the queue's head in the release's own statement: the row
// shows the dead waiter as holder, nobody gets the key before that lease ends, and the next
// owner gets it once it has (a TTL after the waiter's last write of its place at most). Without
// the grant (MySQL/MariaDB), the dead head holds the queue back until its place expires
// (waiter_ttl). A row lock or session lock waiter may have been given the lock by the server
// while stopped: the server frees it with the killed waiter's session. Others poll: the key is
// free at once. Optimistic leases exclude nobody: nobody waits.
TEST_P(ProcessFaultTest, AWaiterKilledAfterTheReleaseGaveItTheKeyHoldsItNoLongerThanItsLease) {
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases exclude nobody, so nobody waits; the killed holder's case "
        "is AHolderKilledWithSigkillIsReplacedWhenItsLeaseEnds");
    return;
  }
  constexpr int kTtlMs = 3000;  // the waiter's lease: a grant needs half of it left
  auto lock = make_lock();
  HistoryWriter history(new_history("local"));
  RecordedHolder first(*lock, history, "first", "job", milliseconds(30000));
  ASSERT_TRUE(first.acquire(milliseconds(0)));
  ChildProcess waiter(worker_argv("wait", "job", kTtlMs, new_history("waiter"), "waiter"), {});
  // It waits: queued (its place written), or past its first try.
  if (strategy().queues) {
    const std::string waiters =
        "SELECT count(*) AS n FROM " + tables_.qualified(backend().dialect, "lock_waiters");
    const auto until = std::chrono::steady_clock::now() + milliseconds(15000);
    while (conn_->execute(waiters).int64_at(0, "n") == 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), until) << "the waiter never queued";
      std::this_thread::sleep_for(milliseconds(5));
    }
  } else {
    std::this_thread::sleep_for(milliseconds(500));
  }
  waiter.signal(SIGSTOP);
  EXPECT_EQ(first.release(), "released");
  const auto released_at = monotonic_us();
  const auto after = row("job");
  const bool granted = after && after->hold_count > 0 && after->owner_thread == "name:waiter";
  if (strategy().queues && backend().dialect == Dialect::kPostgreSQL) {
    EXPECT_TRUE(granted) << "the release did not grant the key to the queue's head";
  }
  waiter.signal(SIGKILL);
  waiter.wait();
  EXPECT_EQ(waiter.output_so_far().find("token "), std::string::npos)
      << "the stopped waiter took the key: " << waiter.output_so_far();
  if (granted) {
    RecordedHolder early(*lock, history, "early", "job", milliseconds(30000));
    EXPECT_FALSE(early.acquire(milliseconds(0))) << "the key was free while granted";
  }
  RecordedHolder taker(*lock, history, "taker", "job", milliseconds(30000));
  ASSERT_TRUE(taker.acquire(milliseconds(15000)));
  const auto took_ms = (monotonic_us() - released_at) / 1000;
  EXPECT_GT(taker.token(), first.token());
  int limit_ms = kSlackMs;
  if (granted) {
    limit_ms += kTtlMs;
  } else if (strategy().queues) {
    limit_ms += static_cast<int>(UniqueKeyLockOptions{}.waiter_ttl.count());
  }
  EXPECT_LE(took_ms, limit_ms);
  std::printf("[ killed waiter ] %s: %s; the next owner took the key %lld ms after the release\n",
              backend().name.c_str(),
              granted             ? "the release granted the key to the stopped waiter"
              : strategy().queues ? "its place headed the queue until it expired"
                                  : "the key was free, or freed with the waiter's session",
              static_cast<long long>(took_ms));
  EXPECT_EQ(taker.release(), "released");
  check_histories();
}

// Scenario 7. Holders whose wall clock is two hours ahead or behind: renewal keeps the lease
// past its TTL, release frees it, and a killed holder's lease ends one TTL later, exactly as
// without the skew (no client clock enters a lock decision). Without a TTL: the lease lasts
// until release, and a killed holder's ends at once. Optimistic: the skewed holder's commit
// lands, a local writer that read the same version gets kConflict, a killed one's write is
// rolled back.
TEST_P(ProcessFaultTest, ClientClocksTwoHoursOffChangeNothing) {
  ASSERT_TRUE(libfaketime_installed()) << "libfaketime is missing: run scripts/install-deps.sh";
  constexpr int kTtlMs = 1000;
  auto lock = make_lock();
  HistoryWriter history(new_history("local"));
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases exclude nobody, so there is no intruder to keep out; checked instead "
        "that a skewed holder paused for 1.5 TTLs still commits, that a local writer who read "
        "the same version gets kConflict, and that a killed skewed holder's write is rolled "
        "back while the next writer commits at once");
  }
  for (const std::string offset : {"+2h", "-2h"}) {
    const auto skew = wall_clock_off_by(offset);
    const std::string key = "clock" + offset;
    ChildProcess holder(worker_argv("hold", key, kTtlMs, new_history("skewed"), "skewed"), skew);
    ASSERT_TRUE(holder.wait_for_output(" wall ", milliseconds(15000))) << holder.output_so_far();
    EXPECT_NEAR(printed_wall_clock_skew(holder.output_so_far()),
                offset[0] == '+' ? 7200.0 : -7200.0, 60.0);
    RecordedHolder intruder(*lock, history, "local", key, milliseconds(30000));
    if (strategy().exclusive) {
      EXPECT_FALSE(intruder.acquire(milliseconds(0))) << offset;
      std::this_thread::sleep_for(milliseconds(kTtlMs * 3 / 2));  // held only by renewals now
      EXPECT_FALSE(intruder.acquire(milliseconds(0))) << offset;
    } else {
      // Both read the same version; the skewed holder commits first, so the local one loses.
      ASSERT_TRUE(intruder.acquire(milliseconds(0))) << offset;
      std::this_thread::sleep_for(milliseconds(kTtlMs * 3 / 2));
    }
    holder.signal(SIGUSR1);
    auto r = holder.wait();
    EXPECT_NE(r.out.find("fenced=1 renew=1 release=released lost=0"), std::string::npos)
        << offset << ": " << r.out << r.err;
    if (strategy().exclusive) {
      EXPECT_TRUE(intruder.acquire(milliseconds(0))) << offset;
      EXPECT_EQ(intruder.release(), "released");
    } else {
      EXPECT_EQ(increment_and_release(intruder, "local"), "conflict") << offset;
    }

    // A skewed holder that dies: its lease ends one TTL later by the database clock.
    const std::string dying_key = key + "-killed";
    ChildProcess dying(worker_argv("hold", dying_key, kTtlMs, new_history("dying"), "dying"), skew);
    ASSERT_TRUE(dying.wait_for_output("token ", milliseconds(15000))) << dying.output_so_far();
    dying.signal(SIGKILL);
    const auto killed_at = monotonic_us();
    dying.wait();
    RecordedHolder heir(*lock, history, "local", dying_key, milliseconds(30000));
    ASSERT_TRUE(heir.acquire(milliseconds(10000))) << offset;
    if (strategy().transactional) {
      EXPECT_EQ(increment_and_release(heir, "heir"), "released") << offset;
    } else {
      EXPECT_EQ(heir.release(), "released");
    }
    const auto took_ms = (monotonic_us() - killed_at) / 1000;
    // A second, not hours; no TTL: at once.
    EXPECT_LE(took_ms, (strategy().ends_with_ttl ? kTtlMs : 0) + kSlackMs) << offset;
    std::printf("[ skew     ] %s %s: a killed holder's key %s %lld ms after SIGKILL (%s)\n",
                backend().name.c_str(), offset.c_str(),
                strategy().exclusive ? "taken" : "written and committed",
                static_cast<long long>(took_ms),
                strategy().ends_with_ttl ? "TTL 1000 ms" : "no TTL");
    if (strategy().transactional) {
      EXPECT_EQ(rows_written_by("dying"), 0) << offset << ": the killed holder's write committed";
    }
  }
  if (strategy().transactional) {
    // Each offset: the skewed holder's commit (and, optimistic, not the local one), the heir's.
    EXPECT_EQ(counter(), 4);
  }
  check_histories();
}

INSTANTIATE_TEST_SUITE_P(Faults, ProcessFaultTest, ::testing::ValuesIn(fault_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
