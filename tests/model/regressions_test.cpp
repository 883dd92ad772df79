// SPDX-License-Identifier: Apache-2.0
// Deterministic scenarios of the model test, one per defect the random sequences found, run as
// scripted steps through the same runner and checks (model_runner.hpp): each fails while its
// defect is there, whatever the seed.
#include <gtest/gtest.h>

#include "backends.hpp"
#include "model_runner.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

class ModelRegressionTest : public ::testing::TestWithParam<Backend> {};

// An outer hold of 60 s, a re-entry of 1 s renewed for 1 s and released: the row now expires in
// a second, another owner takes it, and the outer handle must report lost().
TEST_P(ModelRegressionTest, AShortRenewOfAReentryDoesNotLeaveTheOuterHandleBelievingItHolds) {
  ModelRunner m(GetParam(), 1);
  const int outer = m.acquire({"w", "k0", milliseconds(60000)});
  const int inner = m.acquire({"w", "k0", milliseconds(1000)});
  ASSERT_GE(outer, 0);
  ASSERT_GE(inner, 0);
  m.renew(inner, milliseconds(1000));
  m.release(inner);
  m.sleep(milliseconds(1300));
  m.acquire({"x", "k0", milliseconds(5000)});
  EXPECT_TRUE(m.failures().empty()) << m.report();
}

// with_lock whose critical section outlives its TTL while another owner takes the key.
TEST_P(ModelRegressionTest, WithLockDoesNotReportSuccessForALeaseLostDuringFn) {
  ModelRunner m(GetParam(), 2);
  m.with_lock("w", "k0", WithLockFn::kSleepPastTtlIntruder, "x");
  m.with_lock("w", "k1", WithLockFn::kSleepPastTtl);
  m.with_lock("w", "k2", WithLockFn::kQuick);
  m.with_lock("w", "k2", WithLockFn::kRenewedPastTtl);
  EXPECT_TRUE(m.failures().empty()) << m.report();
}

// Owner names that differ only in trailing spaces or case are different owners.
TEST_P(ModelRegressionTest, LookAlikeOwnerNamesDoNotShareAHold) {
  ModelRunner m(GetParam(), 3);
  ASSERT_GE(m.acquire({"w", "k0", milliseconds(60000)}), 0);
  m.acquire({"w ", "k0", milliseconds(60000)});
  m.acquire({"W", "k0", milliseconds(60000)});
  ASSERT_GE(m.acquire({"w ", "k1", milliseconds(60000)}), 0);
  m.acquire({"w", "k1", milliseconds(60000)});
  EXPECT_TRUE(m.failures().empty()) << m.report();
}

// A release lock A keeps after an outage, while the owner goes on through lock B on the same
// table: B must not hand the released hold's token out again, and A's resend must not free the
// hold B's lease has.
TEST_P(ModelRegressionTest, AReleaseKeptAfterAnOutageDoesNotFreeAReentryThroughAnotherLock) {
  ModelRunner m(GetParam(), 4);
  const int first = m.acquire({"w", "k0", milliseconds(60000)});
  ASSERT_GE(first, 0);
  m.outage(OutageOp::kRelease, first);
  m.acquire({"w", "k0", milliseconds(60000), false, 1});  // through lock B
  m.acquire({"w", "k0", milliseconds(60000), false, 0});  // through lock A: resends the release
  EXPECT_TRUE(m.failures().empty()) << m.report();
}

// Two releases kept after outages for one owner and key: one of the current tenure, then one of
// an earlier, expired tenure. The next acquire must send both; sending only the later one left the
// current tenure's hold in place and the acquire re-entered it, handing its token out again.
TEST_P(ModelRegressionTest, TwoReleasesKeptForOneKeyAreBothSentBeforeTheNextAcquire) {
  ModelRunner m(GetParam(), 5);
  const int earlier = m.acquire({"w", "k0", milliseconds(300)});
  ASSERT_GE(earlier, 0);
  m.sleep(milliseconds(400));
  const int other = m.acquire({"x", "k0", milliseconds(60000)});  // the next tenure
  ASSERT_GE(other, 0);
  m.release(other);
  const int current = m.acquire({"w", "k0", milliseconds(60000), false, 1});
  ASSERT_GE(current, 0);
  m.outage(OutageOp::kRelease, current);
  m.outage(OutageOp::kRelease, earlier);
  m.acquire({"w", "k0", milliseconds(60000)});
  EXPECT_TRUE(m.failures().empty()) << m.report();
}

INSTANTIATE_TEST_SUITE_P(Model, ModelRegressionTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
