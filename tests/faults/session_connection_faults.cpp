// SPDX-License-Identifier: Apache-2.0
// Scenarios 3, 4 and 6 for session locks: what each test of connection_faults_test.cpp checks
// instead when the lock is held by the lease's own server session (pg_advisory_lock, GET_LOCK)
// and there is no row and no TTL. A session cannot move to another connection, so nothing is
// retried or recognised: when the session ends (killed, its connection cut, a reply lost) the
// server frees the lock at once, and the holder must know it by then: lost() turns true
// (noticed from the closed socket) and release() throws Error(kLeaseLost). Another owner then
// gets the key with a higher token, and the next acquire takes a fresh connection.
#include <atomic>
#include <thread>

#include "connection_fault_test.hpp"
#include "dblock/open.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;

std::string ConnectionFaultTest::session_lock_name(const std::string& key) {
  return backend().session_lock_name(*conn_, tables_, key);
}

std::int64_t ConnectionFaultTest::session_holding(const std::string& key) {
  return backend().session_lock_holder(*conn_, tables_, key);
}

bool ConnectionFaultTest::waits_for_lock(std::int64_t id) {
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  const std::string sql =
      pg ? "SELECT pid FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'"
         : "SELECT id FROM information_schema.processlist WHERE id = ? AND state = 'User lock'";
  for (int i = 0; i < 1000; ++i) {
    if (!conn_->execute(sql, {Value(static_cast<long long>(id))}).empty()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

void ConnectionFaultTest::session_killed_mid_hold() {
  not_applicable(
      "a session lock lives in its session, so a killed session ends it and there is nothing to "
      "renew or release on a new connection; checked instead that by the time another owner "
      "gets the key the holder already reports lost, that the owner cannot re-enter the dead "
      "hold, that renew() says no and release() throws kLeaseLost, that the new owner's token "
      "is higher, and that the Lock's next acquire works "
      "on a fresh connection");
  auto [one, other, history] = one_session_scene("mid-hold");
  const auto session = one.session();
  auto lease = try_acquire_recorded(*one.lock, history, "holder", "k", owned_by("holder"));
  ASSERT_TRUE(lease);
  const auto token = lease->fencing_token();
  ASSERT_EQ(session_holding("k"), session) << "the lease is not held by the pool's session";
  RecordedHolder intruder(*other, history, "intruder", "k", milliseconds(30000));
  EXPECT_FALSE(intruder.acquire(milliseconds(0)));
  EXPECT_FALSE(lease->lost());

  backend().kill_session(*conn_, session);
  // The intruder tries as fast as it can: the moment the server lets it have the key, the
  // holder must already know its lease is gone.
  const auto lost_then = lost_when_key_taken(intruder, *lease);
  ASSERT_TRUE(intruder.held()) << "the killed session's lock was not freed";
  const auto taken_at = monotonic_us();
  EXPECT_EQ(lost_then, true)
      << "another owner got the key while the killed holder's lease still looked held";
  if (lost_then == false) {
    while (!lease->lost() && monotonic_us() < taken_at + 5'000'000) {
    }
    std::printf(
        "[ kill     ] %s: the holder reported lost %lld us after another owner took the key\n",
        backend().name.c_str(), static_cast<long long>(monotonic_us() - taken_at));
  }
  EXPECT_GT(intruder.token(), token);
  // The owner's lease is still open: a re-entry must not hand it the dead hold (its old token,
  // on a key another owner holds now).
  EXPECT_EQ(error_of([&] { one.lock->try_acquire("k", owned_by("holder")); },
                     "re-entry onto the killed session's hold"),
            ErrorCode::kConnectionLost);
  expect_ended(*lease, history, "holder");
  const auto now_holding = session_holding("k");
  EXPECT_NE(now_holding, 0);
  EXPECT_NE(now_holding, session) << "the killed session still holds the key";
  EXPECT_EQ(intruder.release(), "released");
  EXPECT_EQ(session_holding("k"), 0) << "a released key is still held on the server";

  EXPECT_GT(take_and_release(*one.lock, history, "holder-again", "k", milliseconds(0),
                             "the Lock's next acquire did not get a fresh connection"),
            intruder.token());
  check_histories();
}

void ConnectionFaultTest::session_killed_mid_acquire() {
  not_applicable(
      "a session-lock acquire waits in the server (pg_advisory_lock, GET_LOCK) and holds "
      "nothing while it waits; when its session is killed there it is not retried (the session "
      "is gone); checked that the error is kConnectionLost, that the holder it waited for still "
      "holds the key, and that the next acquire works on a fresh connection");
  auto [one, other, history] = one_session_scene("mid-acquire");
  RecordedHolder blocker(*other, history, "blocker", "k", milliseconds(30000));
  ASSERT_TRUE(blocker.acquire(milliseconds(0)));
  const auto session = one.session();
  std::optional<bool> got;
  std::optional<ErrorCode> error;
  std::thread acquirer([&] {
    try {
      got = one.lock->acquire("k", milliseconds(20000), owned_by("waiter")).has_value();
    } catch (const Error& e) {
      std::printf("[ reported ] acquire whose session was killed: %s\n", e.what());
      error = e.code();
    }
  });
  if (waits_for_lock(session)) {
    backend().kill_session(*conn_, session);
  } else {
    ADD_FAILURE() << "the acquire never waited";
    blocker.release();  // lets the acquirer through
  }
  acquirer.join();
  EXPECT_EQ(error, ErrorCode::kConnectionLost);
  EXPECT_FALSE(got.has_value());
  EXPECT_FALSE(blocker.lost());
  const auto now_holding = session_holding("k");
  EXPECT_NE(now_holding, 0) << "the holder lost the key when its waiter was killed";
  EXPECT_NE(now_holding, session) << "the killed waiter got the key";
  EXPECT_EQ(blocker.release(), "released");

  EXPECT_GT(take_and_release(*one.lock, history, "after", "k", milliseconds(0),
                             "the next acquire did not get a connection"),
            blocker.token());
  check_histories();
}

void ConnectionFaultTest::session_acquire_reply_lost() {
  not_applicable(
      "a retried session-lock acquire cannot find its own lease: the session that took the "
      "lock died with the cut connection; checked instead that the acquire reports "
      "kConnectionLost, that the server ran the lock statement and freed the lock when the "
      "connection closed, and that the next acquire works");
  auto [cut, other, history, key] = cut_off_scene("lost-reply");
  {
    // The lock statement is prepared before the cut (MySQL), so the cut hits its execution.
    auto warm = cut.lock->try_acquire(key, owned_by("warm-up"));
    ASSERT_TRUE(warm);
    warm->release();
  }
  cut.proxy.cut_after_request_containing(session_lock_name(key));
  EXPECT_EQ(error_of([&] { cut.lock->try_acquire(key, owned_by("me")); }, "acquire, reply lost"),
            ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.cuts(), 1);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not run the cut statement";
  // The server notices the closed connection on its own time: a short wait.
  const std::int64_t intruder =
      take_and_release(*other, history, "intruder", key, milliseconds(5000),
                       "the cut connection's lock stayed held");
  EXPECT_GT(take_and_release(*cut.lock, history, "me", key, milliseconds(0),
                             "the next acquire did not get a fresh connection"),
            intruder);
  check_histories();
}

void ConnectionFaultTest::session_release_reply_lost() {
  not_applicable(
      "a session-lock release is one unlock on the lease's session, which cannot be retried on "
      "another; checked instead that an unlock whose reply was lost is reported as kLeaseLost "
      "(never as released), that the lock is free on the server, that the owner's next "
      "acquire gets a fresh hold with a higher token, and that it excludes another owner");
  auto [cut, other, history, key] = cut_off_scene("lost-release");
  const std::string name = session_lock_name(key);
  auto lease = try_acquire_recorded(*cut.lock, history, "me", key, owned_by("me"));
  ASSERT_TRUE(lease);
  const auto token = lease->fencing_token();
  // The unlock carries the lock's name as the lock statement does; the lock statement is not
  // sent again before the cut.
  cut.proxy.cut_after_request_containing(name);
  const auto release_sent = monotonic_us();
  EXPECT_EQ(error_of([&] { lease->release(); }, "release, reply lost"), ErrorCode::kLeaseLost);
  history.released("me", key, token, release_sent, "error");
  EXPECT_EQ(cut.proxy.cuts(), 1);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not run the cut unlock";
  EXPECT_EQ(session_holding(key), 0) << "the server still holds the lock";
  RecordedHolder next(*cut.lock, history, "me", key, milliseconds(30000));
  ASSERT_TRUE(next.acquire(milliseconds(0))) << "the next acquire did not get a fresh connection";
  EXPECT_GT(next.token(), token) << "the acquire re-entered the ended hold";
  RecordedHolder intruder(*other, history, "intruder", key, milliseconds(30000));
  EXPECT_FALSE(intruder.acquire(milliseconds(0))) << "another owner got a held key";
  EXPECT_EQ(next.release(), "released");
  EXPECT_TRUE(intruder.acquire(milliseconds(0)));
  EXPECT_EQ(intruder.release(), "released");
  check_histories();
}

void ConnectionFaultTest::session_holder_blackholed() {
  not_applicable(
      "session locks have no TTL: a blackholed holder keeps its lock for as long as the server "
      "keeps its session, so no timer reports it lost; checked instead that nobody else gets "
      "the lock during 3 s of dead network, that the holder finds its lease lost once its "
      "connection is closed, that its release throws kLeaseLost, and that the key is free");
  constexpr int kDeadMs = 3000;
  auto cut = cut_off_holder(milliseconds(1500));
  ASSERT_TRUE(cut.holder.acquire(milliseconds(0)));
  cut.blackhole();
  EXPECT_FALSE(cut.taker.acquire(milliseconds(kDeadMs)))
      << "another client got the lock while the server still had the holder's session";
  EXPECT_FALSE(cut.holder.lost()) << "a lease without a TTL was reported lost by a timer";
  cut.heal();  // the server ends the session, the holder sees the socket closed
  EXPECT_TRUE(cut.holder.lost_within(milliseconds(5000)))
      << "the holder never found its lease lost";
  std::string error;
  EXPECT_EQ(cut.holder.release(&error), "error");
  EXPECT_NE(error.find("ended before the release"), std::string::npos) << error;
  ASSERT_TRUE(cut.taker.acquire(milliseconds(5000))) << "the key stayed held";
  EXPECT_EQ(cut.taker.release(), "released");
  check_histories();
}

}  // namespace dblock::testing
