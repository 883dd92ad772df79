// SPDX-License-Identifier: Apache-2.0
// Scenarios 4 and 5, for a release the server never saw (the fault proxy drops the request, as
// when the server crashes before reading it): the caller gets an error and keeps no lease. The
// owner's next acquire of the key must not re-enter the hold the caller was told is gone (it
// would get back a fencing token already used for writes): the library sends that release again
// first, so the acquire gets a fresh hold with a higher token. A session lock keeps nothing to
// send again (the dropped request closed the session that held the lock); it runs the analogue.
// So does a strategy that keeps no release (StrategyUnderTest::resends_lost_release false: a
// semaphore's permit), whose hold ends by its TTL, and whose owner never re-enters it.
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "fault_fixture.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {
namespace {

class LostReleaseTest : public FaultTest {
 protected:
  // Session locks keep nothing to send again: a release the server never saw went out on the
  // lease's session, which the dropped request closed, and the server freed the lock with it.
  void session_release_dropped();
  void session_release_dropped_then_reentered();
  // Strategies that keep no release to send again: the hold whose release was lost ends by its
  // TTL, and the owner's next acquire neither re-enters it nor frees it.
  void release_dropped_ends_by_ttl();
  void release_dropped_then_acquired_through_another_lock();
  // Drops the release of a fresh lease of `key` through `cut`'s lock (its request and the
  // connection with it); expects Error(kLeaseLost). Returns the lease's token.
  std::int64_t acquire_and_drop_release(CutOffLock& cut, const std::string& key);
};

// How much later than its TTL an unreleased hold may be taken over on a busy machine.
constexpr int kSlackMs = 2000;

std::int64_t LostReleaseTest::acquire_and_drop_release(CutOffLock& cut, const std::string& key) {
  auto lease = cut.lock->try_acquire(key, owned_by("me", false));
  if (!lease) {
    ADD_FAILURE() << "could not acquire " << key;
    return 0;
  }
  const std::int64_t token = lease->fencing_token();
  EXPECT_EQ(fenced_write(token, "me"), 1u);
  // The unlock names the lock by its hash, not by the key: the word of the unlock statement.
  const int cuts = cut.proxy.cuts();
  cut.proxy.drop_request_containing(backend().dialect == Dialect::kPostgreSQL ? "advisory_unlock("
                                                                              : "RELEASE_LOCK(");
  EXPECT_EQ(error_of([&] { lease->release(); }, "release never seen by the server"),
            ErrorCode::kLeaseLost);
  EXPECT_EQ(cut.proxy.cuts(), cuts + 1);
  return token;
}

void LostReleaseTest::session_release_dropped() {
  not_applicable(
      "nothing is kept to send again: the dropped release closed the lease's session and the "
      "server freed the lock with it; checked instead that the release reports kLeaseLost, "
      "that another owner can take the key at once, and that the owner's next acquire gets a "
      "fresh hold with a higher token whose fenced write goes through");
  auto cut = cut_off_lock();
  auto other = make_lock();
  const std::string key = "lost-release";
  const std::int64_t first = acquire_and_drop_release(cut, key);
  // The server notices the closed connection on its own time: a short wait.
  auto taken = other->acquire(key, std::chrono::milliseconds(5000), owned_by("other", false));
  ASSERT_TRUE(taken) << "the dropped release's session kept the lock";
  EXPECT_GT(taken->fencing_token(), first);
  EXPECT_FALSE(cut.lock->try_acquire(key, owned_by("me", false)))
      << "the owner re-entered a freed hold";
  const std::int64_t taken_token = taken->fencing_token();
  EXPECT_EQ(taken->release(), ReleaseOutcome::kReleased);
  auto again = cut.lock->try_acquire(key, owned_by("me", false));
  ASSERT_TRUE(again);
  EXPECT_GT(again->fencing_token(), taken_token);
  EXPECT_EQ(fenced_write(again->fencing_token(), "me"), 1u);
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
}

void LostReleaseTest::session_release_dropped_then_reentered() {
  not_applicable(
      "nothing is kept to send first: the dropped release ended the lease's session; checked "
      "instead that the owner's next acquire through a second lock object on the same source "
      "gets a fresh hold (higher token), that a re-entry through that object and its release "
      "leave the live hold alone, and that the first object, whose session is another, is "
      "kept out like any other owner");
  auto cut = cut_off_lock({.max_size = 3});
  const auto& first_lock = cut.lock;
  auto second_lock = make_lock(*cut.pool);
  const std::string key = "lost-release-2";
  const std::int64_t first = acquire_and_drop_release(cut, key);
  // The owner's next acquire waits for the server to notice the closed session.
  auto second = second_lock->acquire(key, std::chrono::milliseconds(5000), owned_by("me", false));
  ASSERT_TRUE(second);
  EXPECT_GT(second->fencing_token(), first) << "the acquire re-entered the ended hold";
  auto inner = second_lock->try_acquire(key, owned_by("me", false));
  ASSERT_TRUE(inner) << "the owner could not re-enter its live hold";
  EXPECT_EQ(inner->fencing_token(), second->fencing_token());
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  // Reentrancy is per lock object: the first one holds nothing of the key, so its session waits
  // its turn like any other.
  EXPECT_FALSE(first_lock->try_acquire(key, owned_by("me", false))) << "two sessions held one key";
  EXPECT_FALSE(second_lock->try_acquire(key, owned_by("other", false)))
      << "another owner got a held key";
  EXPECT_FALSE(second->lost());
  EXPECT_EQ(second->release(), ReleaseOutcome::kReleased);
  auto after = second_lock->try_acquire(key, owned_by("other", false));
  ASSERT_TRUE(after) << "the key stayed held after its last release";
  EXPECT_EQ(after->release(), ReleaseOutcome::kReleased);
}

void LostReleaseTest::release_dropped_ends_by_ttl() {
  constexpr int kTtlMs = 2000;
  not_applicable(
      "nothing is kept to send again: a hold whose release was never confirmed ends by its "
      "TTL; checked instead that the release reports kConnectionLost, that the server still "
      "holds it and the owner's next acquire neither re-enters it nor gets a second one, that "
      "another owner gets the key within TTL + " +
      std::to_string(kSlackMs) +
      " ms (not before the TTL) with a higher token, that the stale token's fenced write is "
      "refused, and that the owner's next acquire then gets a fresh hold");
  auto [cut, other, history, key] = cut_off_scene("lost-release");
  LockOptions me = owned_by("me", false);
  me.ttl = std::chrono::milliseconds(kTtlMs);

  const auto sent = monotonic_us();
  auto lease = cut.lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  // No release is recorded: nobody told the client the hold ended, so it lasts its TTL.
  history.acquired("me", key, first, monotonic_us(), sent, kTtlMs);
  EXPECT_EQ(fenced_write(first, "me"), 1u);

  cut.proxy.drop_request_containing(key, 2);  // the release and its retry
  EXPECT_EQ(error_of([&] { lease->release(); }, "release never seen by the server"),
            ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.cuts(), 2);
  auto held = row(key);
  ASSERT_TRUE(held) << "the server saw the release after all";
  EXPECT_EQ(held->fencing_token, first);
  EXPECT_FALSE(cut.lock->try_acquire(key, me)) << "the owner got the key while its unreleased hold "
                                                  "lived (re-entered it, or a second one)";
  EXPECT_EQ(row(key)->fencing_token, first);

  RecordedHolder taker(*other, history, "other", key, std::chrono::milliseconds(30000));
  ASSERT_TRUE(taker.acquire(std::chrono::milliseconds(kTtlMs + 10000)))
      << "the unreleased hold never ended";
  const auto took_ms = (monotonic_us() - sent) / 1000;
  EXPECT_LE(took_ms, kTtlMs + kSlackMs);
  EXPECT_GT(taker.token(), first);
  EXPECT_EQ(fenced_write(taker.token(), "other"), 1u);
  EXPECT_EQ(fenced_write(first, "me"), 0u) << "the stale token's write went through";
  std::printf(
      "[ lost rel ] %s: another owner got the key %lld ms after the unreleased hold was "
      "acquired (TTL %d ms)\n",
      backend().name.c_str(), static_cast<long long>(took_ms), kTtlMs);
  EXPECT_EQ(taker.release(), "released");

  const auto again_sent = monotonic_us();
  auto again = cut.lock->try_acquire(key, me);
  ASSERT_TRUE(again);
  const std::int64_t again_token = again->fencing_token();
  history.acquired("me", key, again_token, monotonic_us(), again_sent, kTtlMs);
  EXPECT_GT(again_token, taker.token());
  EXPECT_EQ(fenced_write(again_token, "me"), 1u);
  const auto release_sent = monotonic_us();
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
  history.released("me", key, again_token, release_sent, "released");
  EXPECT_FALSE(row(key));
  check_histories();  // the taker's hold starts after the unreleased hold's TTL
}

void LostReleaseTest::release_dropped_then_acquired_through_another_lock() {
  constexpr int kTtlMs = 2000;
  not_applicable(
      "no analogue: nothing is kept, so no lock object sends a lost release first, and there "
      "is no re-entry for it to spare; checked instead that the owner's acquire through a "
      "second lock object on the same source is refused while the unreleased hold lives, gets "
      "a fresh hold (higher token) within TTL + " +
      std::to_string(kSlackMs) +
      " ms, and that then neither the first object (same owner) nor another owner gets the "
      "key, and its release frees it");
  auto cut = cut_off_lock();
  const auto& first_lock = cut.lock;
  auto second_lock = make_lock(*cut.pool);
  HistoryWriter history(new_history("lost-release-2"));
  const std::string key = "lost-release-2";
  LockOptions me = owned_by("me", false);
  me.ttl = std::chrono::milliseconds(kTtlMs);

  const auto sent = monotonic_us();
  auto lease = first_lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  history.acquired("me", key, first, monotonic_us(), sent, kTtlMs);  // no release: its TTL
  cut.proxy.drop_request_containing(key, 2);                         // the release and its retry
  EXPECT_THROW(lease->release(), Error);
  ASSERT_TRUE(row(key)) << "the server saw the release after all";

  EXPECT_FALSE(second_lock->try_acquire(key, me)) << "the owner got the key while its "
                                                     "unreleased hold lived";
  RecordedHolder second(*second_lock, history, "me", key, std::chrono::milliseconds(kTtlMs));
  ASSERT_TRUE(second.acquire(std::chrono::milliseconds(kTtlMs + 10000)))
      << "the unreleased hold never ended";
  EXPECT_LE((monotonic_us() - sent) / 1000, kTtlMs + kSlackMs);
  EXPECT_GT(second.token(), first) << "the acquire re-entered the unreleased hold";
  EXPECT_FALSE(first_lock->try_acquire(key, me)) << "the owner got a second hold of the key";
  EXPECT_FALSE(second_lock->try_acquire(key, owned_by("other", false)))
      << "another owner got a held key";
  EXPECT_FALSE(second.lost());
  EXPECT_EQ(second.release(), "released");
  EXPECT_FALSE(row(key));
  check_histories();
}

// The strategies whose release is a statement of its own (not the COMMIT of the lease's
// transaction, whose lost reply transactional_connection_faults.cpp covers).
std::vector<FaultCase> release_statement_cases() {
  std::vector<FaultCase> out;
  for (auto& c : fault_cases()) {
    if (!c.strategy.transactional) out.push_back(c);
  }
  return out;
}

TEST_P(LostReleaseTest, TheOwnersNextAcquireSendsALostReleaseAgainAndGetsAFreshToken) {
  if (strategy().held_by_session()) return session_release_dropped();
  if (!strategy().resends_lost_release) return release_dropped_ends_by_ttl();
  auto cut = cut_off_lock();
  const std::string key = "lost-release";
  const LockOptions me = owned_by("me", false);

  auto lease = cut.lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  EXPECT_EQ(fenced_write(first, "me"), 1u);

  // The release and its retry are dropped; so are the next acquire's resend and its retry.
  cut.proxy.drop_request_containing(key, 4);
  EXPECT_EQ(error_of([&] { lease->release(); }, "release never seen by the server"),
            ErrorCode::kConnectionLost);
  auto held = row(key);
  ASSERT_TRUE(held) << "the server saw the release after all";
  EXPECT_EQ(held->fencing_token, first);
  EXPECT_EQ(held->hold_count, 1);
  EXPECT_EQ(error_of([&] { cut.lock->try_acquire(key, me); },
                     "an acquire whose pending release could not be sent"),
            ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.cuts(), 4);
  EXPECT_EQ(row(key)->fencing_token, first);

  auto again = cut.lock->try_acquire(key, me);  // the server is reachable again
  ASSERT_TRUE(again);
  EXPECT_GT(again->fencing_token(), first) << "the acquire re-entered the released hold";
  EXPECT_EQ(row(key)->hold_count, 1);
  EXPECT_EQ(fenced_write(again->fencing_token(), "me"), 1u);
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(row(key));
}

// A release kept after a lost connection belongs to the process, not to the UniqueKeyLock that
// sent it: the owner's next acquire through a second lock object on the same table sends it
// first (and gets a fresh hold), and sending it never frees a live re-entry made meanwhile.
TEST_P(LostReleaseTest, AKeptReleaseIsSentFirstByAnyLockOnTheTableAndNeverFreesALiveHold) {
  if (strategy().held_by_session()) return session_release_dropped_then_reentered();
  if (!strategy().resends_lost_release) return release_dropped_then_acquired_through_another_lock();
  auto cut = cut_off_lock();
  const auto& first_lock = cut.lock;
  auto second_lock = make_lock(*cut.pool);
  const std::string key = "lost-release-2";
  const LockOptions me = owned_by("me", false);

  auto lease = first_lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  cut.proxy.drop_request_containing(key, 2);  // the release and its retry
  EXPECT_THROW(lease->release(), Error);
  ASSERT_TRUE(row(key)) << "the server saw the release after all";

  // The owner acquires again through the other lock object: the kept release goes first.
  auto second = second_lock->try_acquire(key, me);
  ASSERT_TRUE(second);
  EXPECT_GT(second->fencing_token(), first) << "the acquire re-entered the released hold";
  EXPECT_EQ(row(key)->hold_count, 1);
  // A re-entry through the first lock object and its release leave the live hold alone.
  auto inner = first_lock->try_acquire(key, me);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->fencing_token(), second->fencing_token());
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  auto held = row(key);
  ASSERT_TRUE(held) << "a live hold was freed";
  EXPECT_EQ(held->hold_count, 1);
  EXPECT_FALSE(second_lock->try_acquire(key, owned_by("other", false)))
      << "another owner got a held key";
  EXPECT_FALSE(second->lost());
  EXPECT_EQ(second->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(row(key));
}

INSTANTIATE_TEST_SUITE_P(Faults, LostReleaseTest, ::testing::ValuesIn(release_statement_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
