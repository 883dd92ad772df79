// SPDX-License-Identifier: Apache-2.0
// Scenario 4 for reentrant TTL locks (connection_faults_test.cpp runs it with the history of
// holds off and on): the proxy forwards a lock statement, then cuts the connection before the
// reply. The retried acquire finds its own lease (one hold, the same token); a retried release of
// an inner reentrant hold gives back exactly one hold; a retried last release frees the key.
#include "connection_fault_test.hpp"
#include "dblock/lock_table.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;

void ConnectionFaultTest::reentrant_replies_lost(std::int64_t& outer_token_out) {
  auto [cut, other, history, key] = cut_off_scene("lost-reply");
  LockOptions me = owned_by("me", false);  // no renewal may run into the armed cut
  // The acquire alone carries the metadata: a fair lock reads its queue first (MySQL), with
  // the key too, and that read's reply is not the one lost here.
  me.metadata = R"({"request": "acquire-lost-reply"})";

  cut.proxy.cut_after_request_containing("acquire-lost-reply");
  const auto sent = monotonic_us();
  auto outer = cut.lock->try_acquire(key, me);
  ASSERT_TRUE(outer) << "the retried acquire did not recognise its own lease";
  history.acquired("me", key, outer->fencing_token(), monotonic_us(), sent, 30000);
  EXPECT_EQ(cut.proxy.cuts(), 1);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 1) << "the server did not apply the cut statement";
  auto r = row(key);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_EQ(r->fencing_token, outer->fencing_token());
  RecordedHolder intruder(*other, history, "intruder", key, milliseconds(30000));
  EXPECT_FALSE(intruder.acquire(milliseconds(0)));

  me.metadata.clear();
  auto inner = cut.lock->try_acquire(key, me);
  ASSERT_TRUE(inner);
  EXPECT_EQ(row(key)->hold_count, 2);
  cut.proxy.cut_after_request_containing(key);
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  EXPECT_EQ(cut.proxy.cuts(), 2);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 2);
  r = row(key);
  ASSERT_TRUE(r) << "a retried release gave back the outer hold too";
  EXPECT_EQ(r->hold_count, 1);
  EXPECT_FALSE(intruder.acquire(milliseconds(0)));

  cut.proxy.cut_after_request_containing(key);
  const auto outer_token = outer->fencing_token();
  outer_token_out = outer_token;
  const auto release_sent = monotonic_us();
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
  history.released("me", key, outer_token, release_sent, "released");
  EXPECT_EQ(cut.proxy.cuts(), 3);
  EXPECT_EQ(cut.proxy.answered_after_cut(), 3);
  EXPECT_FALSE(row(key));
  EXPECT_TRUE(intruder.acquire(milliseconds(0)));
  EXPECT_EQ(intruder.release(), "released");
  check_histories();
}

}  // namespace dblock::testing
