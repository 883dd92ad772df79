// SPDX-License-Identifier: Apache-2.0
// Scenario 4 for strategies that are not reentrant (a semaphore's permits: the owner's second
// acquire takes a permit of its own): what the lost-reply tests of connection_faults_test.cpp
// check instead. Their second halves re-enter the owner's hold (a retried inner release gives back
// one hold; the next acquire re-enters an orphaned hold and its release frees it), which such a
// strategy never does. A retry still recognises its own attempt (the same lease id, the same
// release id); a permit nobody was told about ends by its TTL.
#include "connection_fault_test.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {

namespace {

using std::chrono::milliseconds;

// How much later than its TTL an orphaned permit may be taken over on a busy machine.
constexpr int kSlackMs = 2000;

// Acquires and releases `key` once through `lock`, as an owner of its own. A semaphore's first
// acquire of a key finds no limit stored and takes nothing (it stores the limit, then tries
// again): after this, the statement a test cuts is the one that takes the permit.
void use_once(Lock& lock, const std::string& key) {
  LockOptions first;
  first.owner = Owner::named("first");
  auto lease = lock.try_acquire(key, first);
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

}  // namespace

void ConnectionFaultTest::nonreentrant_acquire_reply_lost() {
  not_applicable(
      "not reentrant: the owner's second acquire takes a lease of its own (with one permit: "
      "none is free), so there is no inner hold for a retried release to give back; checked "
      "instead that an acquire whose first reply is lost is retried with the same lease id and "
      "gets exactly one permit (one live row, its lease id and token), that the owner's second "
      "acquire is refused, and that a release whose first reply is lost is retried, reports "
      "kReleased and leaves the key free");
  auto [cut, other, history, key] = cut_off_scene("lost-reply");
  LockOptions me = owned_by("me", false);                // no renewal may run into the armed cut
  me.metadata = R"({"request": "acquire-lost-reply"})";  // in the statement that takes the permit
  use_once(*other, key);

  cut.proxy.cut_after_request_containing("acquire-lost-reply");
  const auto sent = monotonic_us();
  auto lease = cut.lock->try_acquire(key, me);
  // With one permit, a retry that took another instead of finding its own would find none free.
  ASSERT_TRUE(lease) << "the retried acquire did not recognise its own permit";
  const auto token = lease->fencing_token();
  history.acquired("me", key, token, monotonic_us(), sent, 30000);
  EXPECT_EQ(cut.proxy.cuts(), 1);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not apply the cut statement";
  EXPECT_EQ(live_rows(key), 1u) << "the retry took a second permit";
  auto r = row(key);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lease_id, lease->lease_id()) << "the retry did not use the same lease id";
  EXPECT_EQ(r->fencing_token, token);
  RecordedHolder intruder(*other, history, "intruder", key, milliseconds(30000));
  EXPECT_FALSE(intruder.acquire(milliseconds(0)));

  me.metadata.clear();
  EXPECT_FALSE(cut.lock->try_acquire(key, me)) << "the owner got a second permit of a 1-permit key";
  EXPECT_EQ(live_rows(key), 1u);
  EXPECT_EQ(row(key)->fencing_token, token);

  cut.proxy.cut_after_request_containing(key);
  const auto release_sent = monotonic_us();
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased)
      << "the retried release did not recognise its own first attempt";
  history.released("me", key, token, release_sent, "released");
  EXPECT_EQ(cut.proxy.cuts(), 2);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 2);
  EXPECT_FALSE(row(key)) << "the key stayed held after its one release";
  EXPECT_TRUE(intruder.acquire(milliseconds(0)));
  EXPECT_GT(intruder.token(), token);
  EXPECT_EQ(intruder.release(), "released");
  check_histories();
}

void ConnectionFaultTest::nonreentrant_acquire_replies_all_lost() {
  not_applicable(
      "not reentrant: the owner's next acquire cannot re-enter (nor give back) the permit the "
      "lost attempt took; checked instead that the caller gets kConnectionLost, that the "
      "owner's next acquire is refused while that permit lives, and that it ends by its TTL: "
      "another owner gets the key within TTL + " +
      std::to_string(kSlackMs) + " ms, not before the TTL, with a higher token");
  constexpr int kTtlMs = 2000;
  auto [cut, other, history, key] = cut_off_scene("orphan");
  LockOptions me = owned_by("me", false);
  me.ttl = milliseconds(kTtlMs);
  me.metadata = R"({"request": "acquire-orphan"})";
  use_once(*other, key);

  cut.proxy.cut_after_request_containing("acquire-orphan", 2);  // the attempt and its retry
  const auto sent = monotonic_us();
  EXPECT_EQ(error_of([&] { cut.lock->try_acquire(key, me); }, "an acquire whose replies were lost"),
            ErrorCode::kConnectionLost);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 2);
  auto orphan = row(key);
  ASSERT_TRUE(orphan) << "the server did not apply the acquire";
  EXPECT_EQ(live_rows(key), 1u) << "the retry took a second permit";
  // Nobody was told about the orphaned permit, but nobody else may have the key before its
  // TTL, counted from the first attempt's sending at the earliest: the history says so.
  history.acquired("lost-attempt", key, orphan->fencing_token, monotonic_us(), sent, kTtlMs);

  me.metadata.clear();
  EXPECT_FALSE(cut.lock->try_acquire(key, me)) << "the owner got a second permit of a 1-permit key";
  RecordedHolder intruder(*other, history, "intruder", key, milliseconds(30000));
  ASSERT_TRUE(intruder.acquire(milliseconds(kTtlMs + 10000))) << "the orphaned permit never ended";
  const auto took_ms = (monotonic_us() - sent) / 1000;
  EXPECT_LE(took_ms, kTtlMs + kSlackMs);
  EXPECT_GT(intruder.token(), orphan->fencing_token);
  std::printf(
      "[ orphan   ] %s: another owner got the key %lld ms after the lost acquire was "
      "sent (TTL %d ms)\n",
      backend().name.c_str(), static_cast<long long>(took_ms), kTtlMs);
  EXPECT_EQ(intruder.release(), "released");
  EXPECT_FALSE(row(key));
  check_histories();  // the intruder's hold starts after the orphaned permit's TTL
}

}  // namespace dblock::testing
