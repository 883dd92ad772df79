// SPDX-License-Identifier: Apache-2.0
// Tests from the guarantees' side for unique-key leases: no statement shortens the expiry that
// another live hold of the same owner relies on, lost() never stays false while the database
// would grant the key to someone else, and with_lock never reports a critical section as done
// under the lock when the lease was lost while it ran.
#include <thread>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

class LeaseTruthTest : public MigratedLockTest<UniqueKeyLock, UniqueKeyLockOptions> {
 protected:
  LeaseTruthTest() : MigratedLockTest("t", 4) {}
  // Not renewed: expiry decided by the TTLs alone.
  static LockOptions as(const std::string& owner, milliseconds ttl) {
    return MigratedPoolTest::as(owner, ttl, false);
  }
};

// An outer hold with a long TTL and a re-entry with a short one, renewed and released: the
// short TTL must not become the key's expiry, or another owner gets the key while the outer
// lease still reports itself held.
TEST_P(LeaseTruthTest, AReentryWithAShorterTtlNeverShortensTheOuterHold) {
  auto outer = lock_->try_acquire("k", as("w", milliseconds(60000)));
  ASSERT_TRUE(outer);
  auto inner = lock_->try_acquire("k", as("w", milliseconds(1000)));
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->fencing_token(), outer->fencing_token());
  EXPECT_TRUE(inner->renew());
  EXPECT_EQ(inner->release(), ReleaseOutcome::kDecremented);
  std::this_thread::sleep_for(milliseconds(1500));
  auto intruder = lock_->try_acquire("k", as("x", milliseconds(60000)));
  EXPECT_FALSE(intruder && !outer->lost())
      << "another owner holds the key while the outer lease reports itself held";
  EXPECT_FALSE(intruder) << "the re-entry's 1 s TTL became the key's expiry";
  EXPECT_FALSE(outer->lost());
  EXPECT_EQ(outer->release(), ReleaseOutcome::kReleased);
}

// The same with an explicit shorter renew() of the only hold: a renewal extends, never
// shortens, so the lease stays held at least as long as lost() says.
TEST_P(LeaseTruthTest, ARenewWithAShorterTtlNeverEndsTheLeaseEarlier) {
  auto lease = lock_->try_acquire("k", as("w", milliseconds(60000)));
  ASSERT_TRUE(lease);
  EXPECT_TRUE(lease->renew(milliseconds(200)));
  std::this_thread::sleep_for(milliseconds(600));
  auto intruder = lock_->try_acquire("k", as("x", milliseconds(60000)));
  EXPECT_FALSE(intruder && !lease->lost())
      << "another owner holds the key while the lease reports itself held";
  EXPECT_FALSE(intruder);
}

// A critical section that outlives its lease while another owner takes the key: with_lock must
// not return fn's result as if the section had been protected.
TEST_P(LeaseTruthTest, WithLockThrowsLeaseLostWhenTheLeaseWasTakenOverDuringTheSection) {
  bool ran = false;
  try {
    auto out =
        with_lock(*lock_, "k", milliseconds(0), as("slow", milliseconds(300)), [&](Lease& lease) {
          ran = true;
          std::this_thread::sleep_for(milliseconds(500));
          auto other = lock_->try_acquire("k", as("fast", milliseconds(60000)));
          EXPECT_TRUE(other) << "the expired key was not granted to another owner";
          EXPECT_TRUE(lease.lost());
          return 42;
        });
    ADD_FAILURE() << "with_lock returned " << (out ? std::to_string(*out) : "nothing")
                  << " for a section whose lease was taken over";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("'k'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ran);
}

// Expired with nobody else taking the key: the section still ran unprotected for a while.
TEST_P(LeaseTruthTest, WithLockThrowsLeaseLostWhenTheLeaseExpiredDuringTheSection) {
  EXPECT_THROW(
      {
        try {
          with_lock(*lock_, "k", milliseconds(0), as("slow", milliseconds(200)),
                    [](Lease&) { std::this_thread::sleep_for(milliseconds(400)); });
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
          throw;
        }
      },
      Error);
  // A section that stays within its lease returns its result.
  auto out = with_lock(*lock_, "k", milliseconds(0), as("quick", milliseconds(5000)),
                       [](Lease& lease) { return lease.fencing_token(); });
  ASSERT_TRUE(out);
  EXPECT_GT(*out, 0);
}

INSTANTIATE_TEST_SUITE_P(Pairs, LeaseTruthTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
