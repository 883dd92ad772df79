// SPDX-License-Identifier: Apache-2.0
// Scenarios 3, 4 and 6 for the transactional strategies (row lock, optimistic): what each test of
// connection_faults_test.cpp checks instead when the lease is a server transaction. A
// transaction cannot move to another connection, so nothing is retried or recognised: the caller
// is told (an acquire: Error kConnectionLost; a release: Error kLeaseLost, the lease ended before
// its commit), the critical section's writes are rolled back by the server, the lock (row lock)
// is free as soon as the server has dropped the session, and the next acquire takes a fresh
// connection. A COMMIT whose reply is lost is the one case the caller cannot be told the outcome
// of: it must be reported as Error kCommitInDoubt, never as released.
#include <optional>
#include <thread>

#include "connection_fault_test.hpp"
#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;

void ConnectionFaultTest::transactional_session_killed_mid_hold() {
  not_applicable(strategy().exclusive
                     ? "a row lock is its session's transaction, so a killed session ends it at "
                       "once and there is nothing to renew or release on a new connection; "
                       "checked instead that the lease reports lost, release() throws "
                       "kLeaseLost, the write is rolled back, another client gets the lock "
                       "at once, and the Lock's next acquire works on a fresh connection"
                     : "an optimistic lease is its session's transaction, so a killed session "
                       "ends it; checked instead that the lease reports lost, release() throws "
                       "kLeaseLost, the write is not applied, and the next acquire and "
                       "commit work on a fresh connection");
  auto [one, other, history] = one_session_scene("mid-hold");
  auto lease = try_acquire_recorded(*one.lock, history, "holder", "k", owned_by("holder", false));
  ASSERT_TRUE(lease);
  const auto token = lease->fencing_token();
  EXPECT_EQ(increment_counter(*lease->connection(), tables_, "holder"), 1u);
  backend().kill_session(*conn_, backend().session_id(*lease->connection()));
  if (strategy().exclusive) {
    // The intruder tries as fast as it can: the moment the server lets it have the lock, the
    // holder must already know its lease is gone.
    RecordedHolder intruder(*other, history, "intruder", "k", milliseconds(30000));
    const auto lost_then = lost_when_key_taken(intruder, *lease);
    ASSERT_TRUE(intruder.held()) << "the killed session's lock was not freed";
    EXPECT_EQ(lost_then, true)
        << "another owner got the lock while the killed holder's lease still looked held";
    EXPECT_GT(intruder.token(), token);
    EXPECT_EQ(intruder.release(), "released");
  } else {
    std::this_thread::sleep_for(milliseconds(100));  // let the server end it
  }
  expect_ended(*lease, history, "holder");
  EXPECT_EQ(counter(), 0) << "the killed transaction's write was applied";

  auto again = try_acquire_recorded(*one.lock, history, "holder-again", "k",
                                    owned_by("holder-again", false));
  ASSERT_TRUE(again) << "the Lock's next acquire did not get a fresh connection";
  EXPECT_EQ(increment_counter(*again->connection(), tables_, "holder-again"), 1u);
  const auto again_token = again->fencing_token();
  const auto again_release = monotonic_us();
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
  history.released("holder-again", "k", again_token, again_release, "released");
  EXPECT_EQ(counter(), 1);
  check_histories();
}

void ConnectionFaultTest::transactional_session_killed_mid_acquire() {
  not_applicable(strategy().exclusive
                     ? "a row-lock acquire whose session is killed while it waits is not "
                       "retried: its transaction died with the session and held nothing, so the "
                       "error is reported at once; checked that it is kConnectionLost, that "
                       "nothing is held and that the next acquire works"
                     : "an optimistic acquire never waits for another lease, so its version "
                       "read was made to wait behind a table lock and its session killed there; "
                       "checked that the error is kConnectionLost and that the next acquire "
                       "and commit work");
  auto lock = make_lock();
  HistoryWriter history(new_history("mid-acquire"));
  {
    auto first = lock->try_acquire("k", owned_by("first", false));  // creates the key's row
    ASSERT_TRUE(first);
    first->release();
  }
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  const std::string table = tables_.qualified(backend().dialect, strategy().table);
  auto blocker = backend().connect();
  if (strategy().exclusive) {
    blocker->begin();
    blocker->execute("SELECT lock_key FROM " + table + " WHERE lock_key = 'k' FOR UPDATE");
  } else if (pg) {
    blocker->begin();
    blocker->execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
  } else {
    blocker->execute("LOCK TABLES " + table + " WRITE");
  }
  std::optional<bool> got;
  std::optional<ErrorCode> error;
  std::thread acquirer([&] {
    try {
      got = lock->acquire("k", milliseconds(20000), owned_by("holder", false)).has_value();
    } catch (const Error& e) {
      std::printf("[ reported ] acquire whose session was killed: %s\n", e.what());
      error = e.code();
    }
  });
  // Not the blocker: on MySQL its statement, just returned, can still look running.
  const auto killed = blocked_session(strategy().table, "%", backend().session_id(*blocker));
  if (killed < 0) {
    ADD_FAILURE() << "the acquire never waited";
  } else {
    backend().kill_session(*conn_, killed);
    acquirer.join();
  }
  if (!pg && !strategy().exclusive) {
    blocker->execute("UNLOCK TABLES");
  } else {
    blocker->rollback();
  }
  if (acquirer.joinable()) acquirer.join();
  EXPECT_EQ(error, ErrorCode::kConnectionLost);
  EXPECT_FALSE(got.has_value());

  take_and_commit(*lock, history, "after", "k", 1, "the next acquire did not get a connection");
  check_histories();
}

void ConnectionFaultTest::transactional_acquire_reply_lost() {
  not_applicable(strategy().exclusive
                     ? "a retried row-lock acquire cannot find its own lease: the transaction "
                       "that took the lock died with the cut connection; checked instead that "
                       "the acquire reports kConnectionLost, that the server ran the statement "
                       "and freed the lock with the connection, and that the next acquire works"
                     : "an optimistic acquire only reads a version, so there is no lease to "
                       "find again; checked instead that an acquire whose reply was lost reports "
                       "kConnectionLost and that the next acquire and commit work");
  auto [cut, other, history, key] = cut_off_scene("lost-reply");
  {
    // The key's row exists and is known before the cut: the cut hits the lock statement.
    auto warm = cut.lock->try_acquire(key, owned_by("warm-up", false));
    ASSERT_TRUE(warm);
    warm->release();
  }
  cut.proxy.cut_after_request_containing(key);
  EXPECT_EQ(
      error_of([&] { cut.lock->try_acquire(key, owned_by("me", false)); }, "acquire, reply lost"),
      ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.cuts(), 1);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not run the cut statement";
  if (strategy().exclusive) {
    // The server notices the closed connection on its own time: a short wait.
    take_and_release(*other, history, "intruder", key, milliseconds(5000),
                     "the cut connection's lock stayed held");
  }
  take_and_commit(*cut.lock, history, "me", key, 1,
                  "the next acquire did not get a fresh connection");
  check_histories();
}

void ConnectionFaultTest::transactional_release_reply_lost() {
  not_applicable(strategy().exclusive
                     ? "a row lock's release is its COMMIT, which cannot be retried or "
                       "recognised; checked instead that a COMMIT whose reply was lost is "
                       "reported as kCommitInDoubt (never as released) although the server "
                       "committed it, that the lock is free, and that the next acquire works"
                     : "an optimistic release is a compare-and-set and a COMMIT, neither "
                       "retried; checked instead that a lost reply of the compare-and-set is "
                       "reported as kLeaseLost with nothing applied, that a lost reply of "
                       "the COMMIT is reported as kCommitInDoubt (never as released) although "
                       "the server committed it, and that the next acquire and commit work");
  auto [cut, other, history, key] = cut_off_scene("lost-release");
  int cuts = 0;
  std::int64_t committed = 0;
  auto release_with_reply_lost = [&](const std::string& needle, const char* what,
                                     ErrorCode expected) {
    auto lease = try_acquire_recorded(*cut.lock, history, "me", key, owned_by("me", false));
    ASSERT_TRUE(lease);
    const auto token = lease->fencing_token();
    EXPECT_EQ(increment_counter(*lease->connection(), tables_, "me"), 1u);
    cut.proxy.cut_after_request_containing(needle);
    const auto release_sent = monotonic_us();
    EXPECT_EQ(error_of([&] { lease->release(); }, what), expected);
    history.released("me", key, token, release_sent, "error");
    EXPECT_EQ(cut.proxy.cuts(), ++cuts);
    EXPECT_EQ(cut.proxy.answered_after_cut(), cuts) << "the server did not run the cut statement";
  };
  if (!strategy().exclusive) {
    // The compare-and-set carries the key; its transaction dies uncommitted with the connection.
    release_with_reply_lost(key, "release, reply of the compare-and-set lost",
                            ErrorCode::kLeaseLost);
    EXPECT_EQ(counter(), committed) << "a compare-and-set whose connection was cut was applied";
  }
  release_with_reply_lost("COMMIT", "release, reply of the COMMIT lost", ErrorCode::kCommitInDoubt);
  ++committed;  // the server answered the COMMIT: it committed
  EXPECT_EQ(counter(), committed) << "the server's reply to COMMIT came, yet nothing committed";
  if (strategy().exclusive) {
    take_and_release(*other, history, "intruder", key, milliseconds(5000),
                     "the committed lock stayed held");
  }
  take_and_commit(*cut.lock, history, "next", key, committed + 1,
                  "the next acquire did not get a fresh connection");
  check_histories();
}

void ConnectionFaultTest::transactional_holder_blackholed() {
  not_applicable(strategy().exclusive
                     ? "row locks have no TTL: a blackholed holder keeps its lock for as long "
                       "as the server keeps its session, so no timer reports it lost; checked "
                       "instead that nobody else gets the lock during 3 s of dead network, that "
                       "the holder finds its lease lost once its connection fails, that its "
                       "release throws and its write is not applied, and that the key is free"
                     : "optimistic leases have no TTL and exclude nobody; checked instead that "
                       "another writer commits while the holder's network is dead, and that "
                       "the holder, once its connection fails, finds its lease lost, its "
                       "release throws and its write is not applied");
  constexpr int kDeadMs = 3000;
  auto cut = cut_off_holder(milliseconds(1500));
  RecordedHolder& holder = cut.holder;
  RecordedHolder& taker = cut.taker;
  ASSERT_TRUE(holder.acquire(milliseconds(0)));
  // A row of its own, not the counter: its open transaction must not hold up the other writer.
  holder.in_transaction([&](Connection& c) {
    insert_mark(c, tables_, 2, "cut-off");
    return 0;
  });
  cut.blackhole();
  if (strategy().exclusive) {
    EXPECT_FALSE(taker.acquire(milliseconds(kDeadMs)))
        << "another client got the lock while the server still had the holder's session";
  } else {
    ASSERT_TRUE(taker.acquire(milliseconds(0)));
    EXPECT_EQ(
        taker.in_transaction([&](Connection& c) { return increment_counter(c, tables_, "taker"); }),
        1u);
    EXPECT_EQ(taker.release(), "released") << "the blackholed holder got in the writer's way";
  }
  EXPECT_FALSE(holder.lost()) << "a lease without a TTL was reported lost by a timer";
  cut.heal();  // the hung renewal fails and finds the lease lost
  EXPECT_TRUE(holder.lost_within(milliseconds(5000))) << "the holder never found its lease lost";
  std::string error;
  EXPECT_EQ(holder.release(&error), "error");
  std::printf("[ reported ] release by the cut-off holder: %s\n", error.c_str());
  if (strategy().exclusive) {
    ASSERT_TRUE(taker.acquire(milliseconds(5000))) << "the key stayed held";
    EXPECT_EQ(
        taker.in_transaction([&](Connection& c) { return increment_counter(c, tables_, "taker"); }),
        1u);
    EXPECT_EQ(taker.release(), "released");
  }
  EXPECT_EQ(counter(), 1);
  EXPECT_EQ(writer(), "taker");
  EXPECT_EQ(rows_written_by("cut-off"), 0) << "the cut-off holder's write was committed";
  check_histories();
}

}  // namespace dblock::testing
