// Scenarios 4 and 5, for a release the server never saw (the fault proxy drops the request, as
// when the server crashes before reading it): the caller gets an error and keeps no lease. The
// owner's next acquire of the key must not re-enter the hold the caller was told is gone (it
// would get back a fencing token already used for writes): the library sends that release again
// first, so the acquire gets a fresh hold with a higher token.
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "fault_fixture.hpp"
#include "fault_proxy.hpp"

namespace dblock::testing {
namespace {

class LostReleaseTest : public FaultTest {
 protected:
  std::optional<LockRow> row(const std::string& key) {
    for (auto& r : list_locks(*conn_, tables_)) {
      if (r.key == key) return r;
    }
    return std::nullopt;
  }
};

// Only the unique-key strategy keeps its hold in a row that outlives the connection.
std::vector<FaultCase> unique_key_cases() {
  std::vector<FaultCase> out;
  for (auto& c : fault_cases()) {
    if (c.strategy.name == "unique_key") out.push_back(c);
  }
  return out;
}

TEST_P(LostReleaseTest, TheOwnersNextAcquireSendsALostReleaseAgainAndGetsAFreshToken) {
  const DatabaseUrl direct = backend().url();
  FaultProxy proxy(direct.host, direct.effective_port());
  auto pool = open_pool(proxy.through(direct), {.max_size = 2});
  auto lock = make_lock(*pool);
  const std::string key = "lost-release";
  LockOptions me;
  me.owner = Owner::named("me");
  me.auto_renew = false;

  auto lease = lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  EXPECT_EQ(fenced_write(first, "me"), 1u);

  // The release and its retry are dropped; so are the next acquire's resend and its retry.
  proxy.drop_request_containing(key, 4);
  try {
    lease->release();
    ADD_FAILURE() << "a release the server never saw reported an outcome";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
  auto held = row(key);
  ASSERT_TRUE(held) << "the server saw the release after all";
  EXPECT_EQ(held->fencing_token, first);
  EXPECT_EQ(held->hold_count, 1);
  try {
    lock->try_acquire(key, me);
    ADD_FAILURE() << "an acquire whose pending release could not be sent went ahead";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
  }
  EXPECT_EQ(proxy.cuts(), 4);
  EXPECT_EQ(row(key)->fencing_token, first);

  auto again = lock->try_acquire(key, me);  // the server is reachable again
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
  const DatabaseUrl direct = backend().url();
  FaultProxy proxy(direct.host, direct.effective_port());
  auto pool = open_pool(proxy.through(direct), {.max_size = 2});
  auto first_lock = make_lock(*pool);
  auto second_lock = make_lock(*pool);
  const std::string key = "lost-release-2";
  LockOptions me;
  me.owner = Owner::named("me");
  me.auto_renew = false;

  auto lease = first_lock->try_acquire(key, me);
  ASSERT_TRUE(lease);
  const std::int64_t first = lease->fencing_token();
  proxy.drop_request_containing(key, 2);  // the release and its retry
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
  LockOptions other = me;
  other.owner = Owner::named("other");
  EXPECT_FALSE(second_lock->try_acquire(key, other)) << "another owner got a held key";
  EXPECT_FALSE(second->lost());
  EXPECT_EQ(second->release(), ReleaseOutcome::kReleased);
  EXPECT_FALSE(row(key));
}

INSTANTIATE_TEST_SUITE_P(Faults, LostReleaseTest, ::testing::ValuesIn(unique_key_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
