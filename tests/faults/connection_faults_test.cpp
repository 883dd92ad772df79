// SPDX-License-Identifier: Apache-2.0
// Scenarios 3, 4 and 6 (for the transactional strategies each test runs its analogue from
// transactional_connection_faults.cpp, for session locks from session_connection_faults.cpp; the
// lost-reply tests, for strategies that are not reentrant, from
// nonreentrant_connection_faults.cpp): the server ends a lock connection mid-hold and mid-acquire
// (pg_terminate_backend / KILL CONNECTION); a reply is lost after the server applied the
// statement (the fault proxy cuts the connection between request and reply); and the network
// stops answering altogether (the proxy as a blackhole, and a firewall dropping every packet of a
// network namespace).
#include <signal.h>

#include <atomic>
#include <thread>

#include "connection_fault_test.hpp"
#include "dblock/error.hpp"
#include "dblock/history.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "fault_proxy.hpp"
#include "network_namespace.hpp"
#include "process.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;

std::optional<bool> ConnectionFaultTest::lost_when_key_taken(RecordedHolder& taker,
                                                             const Lease& lease) {
  std::optional<bool> lost;
  const auto deadline = monotonic_us() + 5'000'000;
  while (!taker.held() && monotonic_us() < deadline) {
    if (taker.acquire(milliseconds(0))) lost = lease.lost();
  }
  return lost;
}

std::int64_t ConnectionFaultTest::take_and_release(Lock& lock, HistoryWriter& history,
                                                   const std::string& client,
                                                   const std::string& key, milliseconds wait,
                                                   const char* if_not) {
  RecordedHolder holder(lock, history, client, key, milliseconds(30000));
  if (!holder.acquire(wait)) {
    ADD_FAILURE() << if_not;
    return 0;
  }
  EXPECT_EQ(holder.release(), "released");
  return holder.token();
}

void ConnectionFaultTest::take_and_commit(Lock& lock, HistoryWriter& history,
                                          const std::string& client, const std::string& key,
                                          std::int64_t counter_after, const char* if_not) {
  RecordedHolder holder(lock, history, client, key, milliseconds(30000));
  ASSERT_TRUE(holder.acquire(milliseconds(0))) << if_not;
  EXPECT_EQ(
      holder.in_transaction([&](Connection& c) { return increment_counter(c, tables_, client); }),
      1u);
  EXPECT_EQ(holder.release(), "released");
  EXPECT_EQ(counter(), counter_after);
}

void ConnectionFaultTest::expect_ended(Lease& lease, HistoryWriter& history,
                                       const std::string& client) {
  const std::string key(lease.key());
  const std::int64_t token = lease.fencing_token();
  EXPECT_FALSE(lease.renew());
  EXPECT_TRUE(lease.lost());
  const auto release_sent = monotonic_us();
  EXPECT_EQ(error_of([&] { lease.release(); }, "release after the session was killed"),
            ErrorCode::kLeaseLost);
  history.released(client, key, token, release_sent, "error");
}

std::int64_t ConnectionFaultTest::blocked_session(const std::string& table,
                                                  const std::string& mysql_like,
                                                  std::int64_t not_this,
                                                  const std::string& pg_like) {
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  const std::string sql =
      pg ? "SELECT pid AS id FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
           " AND wait_event_type = 'Lock' AND strpos(query, $1) > 0 AND query LIKE $2"
         : "SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID()"
           " AND command <> 'Sleep' AND LOCATE(?, info) > 0 AND info LIKE ?";
  for (int i = 0; i < 1000; ++i) {
    auto r = pg ? conn_->execute(sql, {Value(tables_.name(table)), Value(pg_like)})
                : conn_->execute(sql, {Value(tables_.name(table)), Value(mysql_like)});
    for (std::size_t n = 0; n < r.size(); ++n) {
      auto id = r.int64_at(n, "id");
      if (id != not_this) return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

namespace {

// Scenario 3, mid-hold. The server ends the session the lock's pool holds: the next renew and
// the release each find the connection gone, reconnect and do their work; no hold is lost or
// doubled.
TEST_P(ConnectionFaultTest, ASessionKilledMidHoldIsReplacedForTheNextCall) {
  if (strategy().transactional) return transactional_session_killed_mid_hold();
  if (strategy().held_by_session()) return session_killed_mid_hold();
  auto [one, other, history] = one_session_scene("mid-hold");
  RecordedHolder holder(*one.lock, history, "holder", "k", milliseconds(30000));
  ASSERT_TRUE(holder.acquire(milliseconds(0)));
  one.kill(*conn_);
  EXPECT_TRUE(holder.renew_now());
  RecordedHolder intruder(*other, history, "intruder", "k", milliseconds(30000));
  EXPECT_FALSE(intruder.acquire(milliseconds(0)));
  EXPECT_EQ(row("k")->hold_count, 1);
  one.kill(*conn_);
  EXPECT_EQ(holder.release(), "released");
  EXPECT_FALSE(row("k"));  // free
  EXPECT_TRUE(intruder.acquire(milliseconds(0)));
  EXPECT_GT(intruder.token(), holder.token());
  EXPECT_EQ(intruder.release(), "released");
  check_histories();
}

// Scenario 3, mid-acquire. The acquire statement waits for a row lock held by another
// transaction while its session is killed: once, and the retry (same lease id) acquires it
// with one hold; on both attempts, and the caller gets Error(kConnectionLost) and holds nothing.
TEST_P(ConnectionFaultTest, ASessionKilledMidAcquireIsRetriedOnceThenReported) {
  if (strategy().transactional) return transactional_session_killed_mid_acquire();
  if (strategy().held_by_session()) return session_killed_mid_acquire();
  auto lock = make_lock();
  HistoryWriter history(new_history("mid-acquire"));
  {
    RecordedHolder first(*lock, history, "first", "k", milliseconds(30000));  // creates the row
    ASSERT_TRUE(first.acquire(milliseconds(0)));
    ASSERT_EQ(first.release(), "released");
  }
  const std::string table = tables_.qualified(backend().dialect, strategy().table);
  auto blocker = backend().connect();
  for (int kills : {1, 2}) {
    SCOPED_TRACE(std::to_string(kills) + " kill(s)");
    blocker->begin();
    blocker->execute("SELECT lock_key FROM " + table + " WHERE lock_key = 'k' FOR UPDATE");
    RecordedHolder holder(*lock, history, "holder" + std::to_string(kills), "k",
                          milliseconds(30000));
    std::optional<bool> got;
    std::optional<ErrorCode> error;
    std::thread acquirer([&] {
      try {
        got = holder.acquire(milliseconds(0));
      } catch (const Error& e) {
        error = e.code();
      }
    });
    std::int64_t killed = -1;
    for (int k = 0; k < kills; ++k) {
      killed = blocked_session(strategy().table, "INSERT%", killed);
      if (killed < 0) {
        ADD_FAILURE() << "the acquire never waited for the row lock";
        break;
      }
      backend().kill_session(*conn_, killed);
    }
    if (kills == 1) {
      // The retry waits for the row lock in its turn; let it through.
      EXPECT_GE(blocked_session(strategy().table, "INSERT%", killed), 0)
          << "the acquire was not retried";
    }
    blocker->rollback();
    acquirer.join();
    if (kills == 1) {
      EXPECT_EQ(got, true);
      EXPECT_FALSE(error.has_value());
      auto r = row("k");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->hold_count, 1);  // the retry did not count a second hold
      EXPECT_EQ(holder.release(), "released");
    } else {
      EXPECT_EQ(error, ErrorCode::kConnectionLost);
      EXPECT_FALSE(row("k")) << "a failed acquire left the key held";
    }
  }
  RecordedHolder after(*lock, history, "after", "k", milliseconds(30000));
  EXPECT_TRUE(after.acquire(milliseconds(0)));
  EXPECT_EQ(after.release(), "released");
  check_histories();
}

// Scenario 3, mid-hand-over. A release hands the key to a waiter asleep in the same lock object;
// the hand-over's statement waits for a row lock held by another transaction while its session
// is killed: once, and the retry moves the key to the waiter (one hold, a higher token, the
// holder's release reported released); on both attempts, and the holder gets
// Error(kConnectionLost) while the waiter goes on waiting and never gets the key the holder's
// row still holds. The owner's next acquire sends the kept release first and takes a new token.
TEST_P(ConnectionFaultTest, ASessionKilledMidHandOverIsRetriedOnceThenReported) {
  if (!strategy().hands_over) {
    return not_applicable(
        "a release hands nothing to a waiter; the mid-release kills above cover it");
  }
  auto lock = make_lock();
  HistoryWriter history(new_history("mid-hand-over"));
  const std::string table = tables_.qualified(backend().dialect, strategy().table);
  // The hand-over's own statement, not a plain release.
  const auto hand_over_blocked = [&](std::int64_t not_this) {
    return blocked_session(strategy().table, "UPDATE % SET fencing_token = LAST_INSERT_ID(IF(%",
                           not_this, "%fencing_token = CASE WHEN lease_id =%");
  };
  auto blocker = backend().connect();
  for (int kills : {1, 2}) {
    SCOPED_TRACE(std::to_string(kills) + " kill(s)");
    const std::string n = std::to_string(kills);
    RecordedHolder holder(*lock, history, "holder" + n, "k", milliseconds(30000));
    ASSERT_TRUE(holder.acquire(milliseconds(0)));
    std::optional<Lease> handed;
    std::thread waiter([&] {
      const std::int64_t sent = monotonic_us();
      handed = lock->acquire("k", milliseconds(kills == 1 ? 20000 : 3000),
                             owned_by("waiter" + n, false));
      if (handed) {
        history.acquired("waiter" + n, "k", handed->fencing_token(), monotonic_us(), sent, 30000);
      }
    });
    std::this_thread::sleep_for(milliseconds(300));  // the waiter tried once and sleeps
    blocker->begin();
    blocker->execute("SELECT lock_key FROM " + table + " WHERE lock_key = 'k' FOR UPDATE");
    std::string outcome;
    std::thread releaser([&] { outcome = holder.release(); });
    std::int64_t killed = -1;
    for (int k = 0; k < kills; ++k) {
      killed = hand_over_blocked(killed);
      if (killed < 0) {
        ADD_FAILURE() << "no hand-over waited for the row lock";
        break;
      }
      backend().kill_session(*conn_, killed);
    }
    if (kills == 1) {
      EXPECT_GE(hand_over_blocked(killed), 0) << "the hand-over was not retried";
    }
    if (kills == 2) releaser.join();  // it failed while the row lock was still held
    blocker->rollback();
    if (kills == 1) releaser.join();
    waiter.join();
    auto r = row("k");
    ASSERT_TRUE(r);
    if (kills == 1) {
      EXPECT_EQ(outcome, "released");
      ASSERT_TRUE(handed) << "the retried hand-over did not reach the waiter";
      EXPECT_EQ(r->owner_thread, Owner::named("waiter1").thread);
      EXPECT_EQ(r->hold_count, 1);  // the retry did not count a second hold
      EXPECT_EQ(r->fencing_token, handed->fencing_token());
      EXPECT_GT(handed->fencing_token(), holder.token());
      history.released("waiter1", "k", handed->fencing_token(), monotonic_us(), "released");
      EXPECT_EQ(handed->release(), ReleaseOutcome::kReleased);
    } else {
      EXPECT_EQ(outcome, "error");
      EXPECT_FALSE(handed) << "the waiter got a key the holder's row still held";
      EXPECT_EQ(r->owner_thread, Owner::named("holder2").thread);
      EXPECT_EQ(r->fencing_token, holder.token());
      RecordedHolder again(*lock, history, "holder2", "k", milliseconds(30000));
      ASSERT_TRUE(again.acquire(milliseconds(0)));
      EXPECT_GT(again.token(), holder.token()) << "the kept release was not sent first";
      EXPECT_EQ(again.release(), "released");
    }
  }
  check_histories();
}

// Scenario 4, hand-over. The proxy forwards a release's hand-over to a waiter, then cuts the
// connection before the reply: the retry finds the row already carrying the waiter's lease id and
// reports the same token, the holder is told kReleased, and the waiter holds the key with one
// hold.
TEST_P(ConnectionFaultTest, AHandOverWhoseReplyIsLostIsRecognised) {
  if (!strategy().hands_over) {
    return not_applicable(
        "a release hands nothing to a waiter; LostRepliesAreRetriedAndRecognised covers its "
        "release");
  }
  auto cut = cut_off_lock({.max_size = 3});
  HistoryWriter history(new_history("hand-over-lost-reply"));
  RecordedHolder holder(*cut.lock, history, "holder", "k", milliseconds(30000));
  ASSERT_TRUE(holder.acquire(milliseconds(0)));
  std::optional<Lease> handed;
  std::int64_t asked = 0;
  std::thread waiter([&] {
    asked = monotonic_us();
    handed = cut.lock->acquire("k", milliseconds(20000), owned_by("waiter", false));
  });
  // The waiter tried once and sleeps; while the holder's lease lives it polls every 500 ms.
  std::this_thread::sleep_for(milliseconds(200));
  cut.proxy.cut_after_request_containing(backend().dialect == Dialect::kPostgreSQL
                                             ? "fencing_token = CASE WHEN lease_id ="
                                             : "LAST_INSERT_ID(IF(lease_id");
  EXPECT_EQ(holder.release(), "released");
  waiter.join();
  EXPECT_EQ(cut.proxy.cuts(), 1) << "no hand-over was sent";
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not apply the cut hand-over";
  ASSERT_TRUE(handed) << "the retried hand-over did not reach the waiter";
  history.acquired("waiter", "k", handed->fencing_token(), monotonic_us(), asked, 30000);
  auto r = row("k");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->owner_thread, Owner::named("waiter").thread);
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_EQ(r->fencing_token, handed->fencing_token()) << "the retry handed out another token";
  EXPECT_GT(handed->fencing_token(), holder.token());
  history.released("waiter", "k", handed->fencing_token(), monotonic_us(), "released");
  EXPECT_EQ(handed->release(), ReleaseOutcome::kReleased);
  check_histories();
}

// Scenario 4. The proxy forwards a lock statement, then cuts the connection before the reply
// (for a reentrant TTL lock: reentrant_connection_faults.cpp).
TEST_P(ConnectionFaultTest, LostRepliesAreRetriedAndRecognised) {
  if (strategy().transactional) return transactional_acquire_reply_lost();
  if (strategy().held_by_session()) return session_acquire_reply_lost();
  if (!strategy().reentrant) return nonreentrant_acquire_reply_lost();
  std::int64_t token = 0;
  reentrant_replies_lost(token);
}

// Scenario 4 with the history of holds on: a trigger runs in every statement that changes a lock
// row, which on MySQL and MariaDB clears the token or hold count from the statement's reply. The
// retried acquire and releases still read theirs (a wrong count would free the outer hold, a
// wrong token lose the lease), and the one tenure is recorded once, as released.
TEST_P(ConnectionFaultTest, LostRepliesAreRetriedAndRecognisedWithTheHistoryOn) {
  if (strategy().table != "locks" || !strategy().reentrant || strategy().held_by_session()) {
    return not_applicable("the history of holds records unique-key locks only");
  }
  enable_history(*pool_->acquire(), tables_);
  std::int64_t token = 0;
  reentrant_replies_lost(token);
  if (HasFatalFailure()) return;
  const std::vector<HistoryRow> ended = read_history(*pool_->acquire(), tables_, "lost-reply");
  ASSERT_EQ(ended.size(), 2u) << "the outer tenure, then the intruder's";
  EXPECT_EQ(ended[1].fencing_token, token);
  EXPECT_EQ(ended[1].ended_how, HoldEnd::kReleased);
  EXPECT_EQ(ended[0].ended_how, HoldEnd::kReleased);
}

// Scenario 4, when the retry's reply is lost too: the caller gets Error(kConnectionLost) and no
// lease, but the server applied the acquire. The owner's next acquire re-enters that orphaned
// hold; its release must free the key all the same (this process holds no other lease of the
// owner on it), not leave it held for as long as the owner keeps coming back.
TEST_P(ConnectionFaultTest, AnAcquireWhoseRepliesAreAllLostLeavesNothingHeldAfterTheNextRelease) {
  if (strategy().transactional) return transactional_release_reply_lost();
  if (strategy().held_by_session()) return session_release_reply_lost();
  if (!strategy().reentrant) return nonreentrant_acquire_replies_all_lost();
  auto [cut, other, history, key] = cut_off_scene("orphan");
  LockOptions me = owned_by("me", false);
  me.metadata = R"({"request": "acquire-orphan"})";  // in the acquire alone (see LostReplies...)

  cut.proxy.cut_after_request_containing("acquire-orphan", 2);  // the attempt and its retry
  EXPECT_EQ(
      error_of([&] { cut.lock->try_acquire(key, me); }, "an acquire whose replies were all lost"),
      ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 2);
  auto orphan = row(key);
  ASSERT_TRUE(orphan) << "the server did not apply the acquire";
  EXPECT_EQ(orphan->hold_count, 1);

  me.metadata.clear();
  const auto sent = monotonic_us();
  auto lease = cut.lock->try_acquire(key, me);  // re-enters the orphaned hold
  ASSERT_TRUE(lease);
  const auto token = lease->fencing_token();
  history.acquired("me", key, token, monotonic_us(), sent, 30000);
  EXPECT_EQ(row(key)->hold_count, 2);
  const auto release_sent = monotonic_us();
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  history.released("me", key, token, release_sent, "released");
  EXPECT_FALSE(row(key)) << "the orphaned hold kept the key";
  RecordedHolder intruder(*other, history, "intruder", key, milliseconds(30000));
  EXPECT_TRUE(intruder.acquire(milliseconds(0)));
  EXPECT_EQ(intruder.release(), "released");
  check_histories();
}

// Scenario 6, without privileges: the proxy stops forwarding in both directions and keeps the
// sockets open, so the holder's renewal hangs. The holder reports its lease lost when its TTL
// has passed since its last renewal was sent, and nobody else gets the key before then.
TEST_P(ConnectionFaultTest, ABlackholedHolderReportsLostAndIsNotReplacedBeforeItsTtl) {
  if (strategy().transactional) return transactional_holder_blackholed();
  if (strategy().held_by_session()) return session_holder_blackholed();
  constexpr int kTtlMs = 1500;
  auto cut = cut_off_holder(milliseconds(kTtlMs));
  RecordedHolder& holder = cut.holder;
  RecordedHolder& taker = cut.taker;
  ASSERT_TRUE(holder.acquire(milliseconds(0)));
  // A lease renewed by the library's own renewer, whose renewal will hang too: its on_lost must
  // come on time all the same.
  std::atomic<std::int64_t> on_lost_at{-1};
  LockOptions watched;
  watched.ttl = milliseconds(kTtlMs);
  watched.owner = Owner::named("watched");
  watched.on_lost = [&](const std::string&) { on_lost_at = monotonic_us(); };
  auto auto_renewed = cut.network.lock->try_acquire("k2", watched);
  ASSERT_TRUE(auto_renewed);
  cut.blackhole();
  const auto blackholed_at = monotonic_us();
  std::int64_t lost_seen = -1;
  const auto deadline = monotonic_us() + 10'000'000;
  while ((lost_seen < 0 || !taker.held() || on_lost_at < 0) && monotonic_us() < deadline) {
    if (lost_seen < 0 && holder.lost()) lost_seen = monotonic_us();
    if (!taker.held()) taker.acquire(milliseconds(0));
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_GE(lost_seen, 0) << "the cut-off holder never reported its lease lost";
  ASSERT_TRUE(taker.held()) << "nobody got the key after the holder was cut off";
  // lost() turns true when the TTL since the last renewal has passed (polled every few ms).
  EXPECT_GE(lost_seen, holder.valid_until_us());
  EXPECT_LE(lost_seen - holder.valid_until_us(), 200'000);
  std::printf("[ blackhole] %s: holder reported lost %lld ms after its last renewal was sent\n",
              backend().name.c_str(),
              static_cast<long long>((lost_seen - holder.valid_until_us()) / 1000 + kTtlMs));
  EXPECT_GE(on_lost_at.load(), 0) << "on_lost never came while the renewal hung";
  EXPECT_LE(on_lost_at.load() - blackholed_at, (kTtlMs + 300) * 1000);
  EXPECT_TRUE(auto_renewed->lost());
  cut.heal();  // the hung renewal fails, its retry finds the lease gone
  EXPECT_EQ(holder.release(), "not_held");
  EXPECT_EQ(taker.release(), "released");
  check_histories();  // the taker's hold starts after the holder's lease ran out
}

// A renewal hung on a blackholed connection holds back only its own lease: another lease of the
// process, on a healthy connection, keeps being renewed past its TTL (one renewal thread for
// every lease would wait behind the hung one and let the healthy lease expire).
TEST_P(ConnectionFaultTest, AHungRenewalHoldsBackNoOtherLeasesRenewal) {
  if (strategy().transactional) {
    return not_applicable(
        "no background renewal: a transactional lease is held by its open transaction");
  }
  constexpr int kTtlMs = 1200;
  if (strategy().held_by_session()) {
    not_applicable(
        "no background renewal: a session lease is held by its session and nothing expires; "
        "checked instead that a lease whose connection hangs (blackholed) keeps its key while "
        "the server keeps its session, and that a lease of the same Lock on a healthy "
        "connection stays held, excludes others and releases");
  }
  auto cut_off = cut_off_lock();
  auto lock = make_lock();
  LockOptions opts;
  opts.ttl = milliseconds(kTtlMs);
  opts.owner = Owner::named("cut-off");
  auto cut = cut_off.lock->try_acquire("cut", opts);
  ASSERT_TRUE(cut);
  opts.owner = Owner::named("healthy");
  auto healthy = lock->try_acquire("healthy", opts);
  ASSERT_TRUE(healthy);
  cut_off.proxy.set_blackhole(true);  // the cut-off lease's next renewal hangs
  std::this_thread::sleep_for(milliseconds(3 * kTtlMs));
  LockOptions intruder = opts;
  intruder.owner = Owner::named("intruder");
  intruder.auto_renew = false;
  if (strategy().ends_with_ttl) {
    EXPECT_TRUE(cut->lost()) << "a lease whose renewals hang for three TTLs still looks held";
  } else {
    EXPECT_FALSE(cut->lost()) << "a lease without a TTL was reported lost by a timer";
    EXPECT_FALSE(lock->try_acquire("cut", intruder)) << "the blackholed holder's key was free";
  }
  EXPECT_FALSE(healthy->lost()) << "the healthy lease was not renewed while another one hung";
  EXPECT_FALSE(lock->try_acquire("healthy", intruder)) << "the healthy lease expired";
  EXPECT_EQ(healthy->release(), ReleaseOutcome::kReleased);
  cut_off.heal();
}

// Scenario 6 with a real network: the holder runs in a network namespace of its own and reaches
// the server over a veth pair (through the proxy, since the servers listen on loopback only);
// then the namespace's firewall drops every packet. The holder reports its lease lost when the
// TTL since its last renewal has passed; nobody else gets the key before then. Where the
// machine allows no namespace (no root, no CAP_NET_ADMIN, no nft), the test says precisely why
// and does nothing else; the proxy blackhole above runs everywhere.
TEST_P(ConnectionFaultTest, AHolderBehindADroppingFirewallReportsLostAndIsNotReplacedEarly) {
  std::string why_not;
  auto ns = NetworkNamespace::create(&why_not);
  if (!ns) {
    std::printf("[ netns    ] not possible here: %s\n", why_not.c_str());
    return;
  }
  constexpr int kTtlMs = 1500;
  const DatabaseUrl direct = backend().url();
  FaultProxy proxy(direct.host, direct.effective_port(), ns->host_address());
  // The password goes by environment (DBLOCK_PASSWORD), not by argv.
  const std::string inside_url =
      std::string(backend().dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql") + "://" +
      direct.user + "@" + ns->host_address() + ":" + std::to_string(proxy.port()) + "/" +
      direct.database + "?driver=" + backend().driver;
  auto argv = ns->exec_prefix();
  for (auto& a : worker_argv("hold", "k", kTtlMs, new_history("namespaced"), "namespaced")) {
    argv.push_back(a == worker_url() ? inside_url : a);
  }
  ChildProcess holder(argv, {{"DBLOCK_PASSWORD", direct.password}});
  if (!holder.wait_for_output("token ", milliseconds(15000))) {
    holder.signal(SIGKILL);
    FAIL() << "the namespaced holder did not start: " << holder.wait().err;
  }
  std::this_thread::sleep_for(milliseconds(kTtlMs / 2));  // a renewal or two get through
  ns->set_blackhole(true);
  auto lock = make_lock();
  HistoryWriter history(new_history("taker"));
  RecordedHolder taker(*lock, history, "taker", "k", milliseconds(30000));
  if (strategy().held_by_session()) {
    not_applicable(
        "session locks have no TTL: the firewalled holder keeps its lock while the server keeps "
        "its session; checked instead that nobody else gets it during 3 s of dropped packets, "
        "and that once the server loses the session the key is free");
  } else if (strategy().transactional) {
    not_applicable(strategy().exclusive
                       ? "row locks have no TTL: the firewalled holder keeps its lock while the "
                         "server keeps its session; checked instead that nobody else gets it "
                         "during 3 s of dropped packets, and that once the server loses the "
                         "session the key is free and the holder's write was not applied"
                       : "optimistic leases have no TTL and exclude nobody; checked instead that "
                         "another writer commits while the holder's packets are dropped and "
                         "that the holder's write is never applied");
  }
  if (!strategy().ends_with_ttl) {
    if (strategy().exclusive) {
      EXPECT_FALSE(taker.acquire(milliseconds(3000)))
          << "another client got the lock while the server still had the holder's session";
    } else {
      ASSERT_TRUE(taker.acquire(milliseconds(0)));
      EXPECT_EQ(taker.in_transaction(
                    [&](Connection& c) { return increment_counter(c, tables_, "taker"); }),
                1u);
      EXPECT_EQ(taker.release(), "released");
    }
    EXPECT_EQ(holder.output_so_far().find("lost_at"), std::string::npos)
        << "a lease without a TTL was reported lost by a timer";
    holder.signal(SIGKILL);
    holder.wait();
    ns.reset();
    proxy.close_all();  // the server loses the holder's session
    if (strategy().exclusive) {
      ASSERT_TRUE(taker.acquire(milliseconds(5000))) << "the key stayed held";
      if (strategy().transactional) {
        EXPECT_EQ(taker.in_transaction(
                      [&](Connection& c) { return increment_counter(c, tables_, "taker"); }),
                  1u);
      }
      EXPECT_EQ(taker.release(), "released");
    }
    if (strategy().transactional) {
      EXPECT_EQ(rows_written_by("namespaced"), 0) << "the cut-off holder's write was committed";
      EXPECT_EQ(counter(), 1);
    }
    check_histories();
    return;
  }
  const auto deadline = monotonic_us() + 10'000'000;
  while (!taker.held() && monotonic_us() < deadline) {
    taker.acquire(milliseconds(0));
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(taker.held()) << "nobody got the key after the holder was cut off";
  EXPECT_TRUE(holder.wait_for_output("lost_at ", milliseconds(5000)))
      << "the cut-off holder never reported its lease lost: " << holder.output_so_far();
  const auto out = holder.output_so_far();
  holder.signal(SIGKILL);  // its renewal hangs in the firewall
  holder.wait();
  ns.reset();
  auto lost_at = out.find("lost_at ");
  if (lost_at != std::string::npos) {
    const long long at = std::stoll(out.substr(lost_at + 8));
    const long long until = std::stoll(out.substr(out.find("valid_until ") + 12));
    EXPECT_GE(at, until);
    EXPECT_LE(at - until, 200'000);
    std::printf("[ netns    ] %s: holder reported lost %lld ms after its lease ran out\n",
                backend().name.c_str(), (at - until) / 1000);
  }
  EXPECT_EQ(taker.release(), "released");
  check_histories();  // the taker's hold starts after the namespaced holder's lease ran out
}

INSTANTIATE_TEST_SUITE_P(Faults, ConnectionFaultTest, ::testing::ValuesIn(fault_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
