// SPDX-License-Identifier: Apache-2.0
// Several keys at once (lock_set.hpp) on every database x driver pair, with the unique-key and
// the row-lock strategies: all or nothing, no deadlock between sets asked for in opposite orders,
// one timeout for the whole set, and every key given back by one release.
#include "dblock/lock_set.hpp"

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

enum class Strategy { kUniqueKey, kRowLock };

struct Case {
  Backend backend;
  Strategy strategy;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend.name << (c.strategy == Strategy::kUniqueKey ? "_unique_key" : "_row_lock");
}

class LockSetTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    tables_ = TableNames(unique_name("s") + "_");
    pool_ = open_pool(backend().url(), {.max_size = 12});
    Migrator(*pool_->acquire(), tables_).up();
    if (GetParam().strategy == Strategy::kUniqueKey) {
      lock_ = std::make_unique<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{.tables = tables_});
    } else {
      lock_ = std::make_unique<RowLock>(*pool_, RowLockOptions{tables_});
    }
  }
  void TearDown() override {
    lock_.reset();
    pool_.reset();
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, tables_.prefix());
  }
  const Backend& backend() const { return GetParam().backend; }
  static LockOptions as(const std::string& owner) {
    LockOptions o;
    o.owner = Owner::named(owner);
    return o;
  }
  // Whether another owner can take `key` now (and gives it back at once).
  bool free_for_another(const std::string& key) {
    auto probe = lock_->try_acquire(key, as("probe"));
    if (!probe) return false;
    probe->release();
    return true;
  }

  TableNames tables_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Lock> lock_;
};

TEST_P(LockSetTest, ASetHoldsEveryKeyOnceAndOneReleaseGivesThemAllBack) {
  const std::vector<std::string> keys{"c", "a", "b", "a"};
  auto set = try_acquire_all(*lock_, keys, as("one"));
  ASSERT_TRUE(set);
  ASSERT_EQ(set->leases().size(), 3u) << "a key asked for twice is taken once";
  EXPECT_EQ(set->leases()[0].key(), "a");
  EXPECT_EQ(set->leases()[2].key(), "c");
  for (const std::string key : {"a", "b", "c"}) {
    EXPECT_GT(set->lease(key).fencing_token(), 0);
    EXPECT_FALSE(free_for_another(key)) << key;
  }
  EXPECT_THROW(set->lease("d"), Error);
  EXPECT_FALSE(set->lost());
  EXPECT_EQ(set->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(set->leases().empty());
  for (const std::string key : {"a", "b", "c"}) EXPECT_TRUE(free_for_another(key)) << key;
}

TEST_P(LockSetTest, AKeyHeldByAnotherOwnerGetsNothingAndLeavesTheOthersFree) {
  auto other = lock_->try_acquire("b", as("other"));
  ASSERT_TRUE(other);
  const std::vector<std::string> keys{"a", "b", "c"};
  EXPECT_FALSE(try_acquire_all(*lock_, keys, as("one")));
  EXPECT_TRUE(free_for_another("a")) << "the key taken before the busy one was given back";
  EXPECT_TRUE(free_for_another("c"));

  const auto start = Clock::now();
  EXPECT_FALSE(acquire_all(*lock_, keys, milliseconds(600), as("one")));
  const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  EXPECT_GE(waited, milliseconds(550)) << "the whole set is waited for up to its timeout";
  EXPECT_LT(waited, milliseconds(1500)) << "one timeout for the set, not one per key";
  EXPECT_TRUE(free_for_another("a"));
  EXPECT_TRUE(free_for_another("c"));

  other->release();
  auto set = acquire_all(*lock_, keys, milliseconds(5000), as("one"));
  ASSERT_TRUE(set);
  EXPECT_EQ(set->release(), ReleaseOutcome::kReleased);
}

// Two owners asking for {x, y} and {y, x} over and over: taken in one order, neither can hold
// one key while waiting for the other's; a deadlock would show as waits that time out.
TEST_P(LockSetTest, SetsAskedForInOppositeOrdersNeverDeadlockNorOverlap) {
  constexpr int kRounds = 40;
  std::atomic<int> inside_x{0}, inside_y{0}, overlaps{0}, timeouts{0}, done{0};
  auto worker = [&](std::vector<std::string> keys, std::string owner) {
    for (int i = 0; i < kRounds; ++i) {
      auto got = with_locks(*lock_, keys, milliseconds(10000), as(owner), [&](LeaseSet&) {
        if (inside_x.fetch_add(1) != 0 || inside_y.fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(milliseconds(2));
        --inside_x;
        --inside_y;
      });
      if (got) {
        ++done;
      } else {
        ++timeouts;
      }
    }
  };
  std::thread one(worker, std::vector<std::string>{"x", "y"}, "one");
  std::thread two(worker, std::vector<std::string>{"y", "x"}, "two");
  one.join();
  two.join();
  EXPECT_EQ(timeouts.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(done.load(), 2 * kRounds);
}

// A critical section that outlived one of its leases (a TTL that ran out; a row lock's session
// that was killed) is not reported as done under the locks.
TEST_P(LockSetTest, WithLocksThrowsLeaseLostWhenAnyLeaseWasLostAndGivesEveryKeyBack) {
  const std::vector<std::string> keys{"a", "b"};
  LockOptions o = as("one");
  o.ttl = milliseconds(300);
  o.auto_renew = false;
  bool ran = false;
  try {
    with_locks(*lock_, keys, milliseconds(5000), o, [&](LeaseSet& set) {
      ran = true;
      Lease& b = set.lease("b");
      if (Connection* c = b.connection()) {
        auto killer = backend().connect();
        backend().kill_session(*killer, backend().session_id(*c));
        std::this_thread::sleep_for(milliseconds(200));
        try {
          c->execute("SELECT 1");  // finds the session gone; the section goes on regardless
        } catch (const Error&) {
        }
      } else {
        std::this_thread::sleep_for(milliseconds(400));  // past the TTL, no renewal
      }
    });
    FAIL() << "with_locks returned although a lease was lost";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
  }
  EXPECT_TRUE(ran);
  EXPECT_TRUE(free_for_another("a"));
  EXPECT_TRUE(free_for_another("b"));
}

// Passes every call to `inner`, and makes the lease it handed out for "a" lost just before it is
// first asked for "b": its session killed (row lock), or its TTL run out (unique key).
class LosesKeyA final : public Lock {
 public:
  LosesKeyA(Lock& inner, const Backend& backend) : inner_(inner), backend_(backend) {}
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options) override {
    before(key, options);
    return after(key, inner_.try_acquire(key, options));
  }
  std::optional<Lease> acquire(std::string_view key, milliseconds timeout,
                               const LockOptions& options) override {
    before(key, options);
    return after(key, inner_.acquire(key, timeout, options));
  }
  using Lock::acquire;
  int times_a_was_taken() const { return taken_a_; }

 private:
  void before(std::string_view key, const LockOptions& options) {
    if (key != "b" || lost_a_) return;
    lost_a_ = true;
    if (session_a_ >= 0) {
      auto killer = backend_.connect();
      backend_.kill_session(*killer, session_a_);
      std::this_thread::sleep_for(milliseconds(200));  // the close reaches the client
    } else {
      std::this_thread::sleep_for(options.ttl + milliseconds(100));
    }
  }
  std::optional<Lease> after(std::string_view key, std::optional<Lease> lease) {
    if (lease && key == "a") {
      ++taken_a_;
      if (Connection* c = lease->connection()) session_a_ = backend_.session_id(*c);
    }
    return lease;
  }

  Lock& inner_;
  const Backend& backend_;
  bool lost_a_ = false;
  std::int64_t session_a_ = -1;
  int taken_a_ = 0;
};

// A LeaseSet holds every key: a lease lost while a later key was taken makes a wait give the set
// back and ask again (a try returns nothing), never return a set that no longer holds a key.
TEST_P(LockSetTest, AKeyLostBeforeTheLastIsTakenGivesTheSetBackAndAWaitAsksAgain) {
  const std::vector<std::string> keys{"b", "a"};
  LockOptions o = as("one");
  o.ttl = milliseconds(300);
  o.auto_renew = false;
  LosesKeyA waiting(*lock_, backend());
  auto set = acquire_all(waiting, keys, milliseconds(5000), o);
  ASSERT_TRUE(set);
  EXPECT_FALSE(set->lost()) << "acquire_all returned a set with a lost lease";
  EXPECT_EQ(waiting.times_a_was_taken(), 2);
  EXPECT_FALSE(free_for_another("a"));
  EXPECT_FALSE(free_for_another("b"));
  EXPECT_EQ(set->release(), ReleaseOutcome::kReleased);

  LosesKeyA trying(*lock_, backend());
  EXPECT_FALSE(try_acquire_all(trying, keys, o)) << "try_acquire_all returned a lost lease";
  EXPECT_TRUE(free_for_another("a"));
  EXPECT_TRUE(free_for_another("b")) << "the try kept the key it took last";
}

TEST_P(LockSetTest, BadSetsAreRefusedBeforeAnythingIsTaken) {
  const std::vector<std::string> none;
  EXPECT_THROW(try_acquire_all(*lock_, none), Error);
  const std::vector<std::string> with_empty{"a", ""};
  try {
    try_acquire_all(*lock_, with_empty, as("one"));
    FAIL() << "an empty key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_TRUE(free_for_another("a")) << "nothing was taken before the refusal";
  const std::vector<std::string> keys{"a"};
  EXPECT_THROW(acquire_all(*lock_, keys, milliseconds(-1)), Error);
}

struct CaseName {
  std::string operator()(const ::testing::TestParamInfo<Case>& param) const {
    return param.param.backend.name +
           (param.param.strategy == Strategy::kUniqueKey ? "_unique_key" : "_row_lock");
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const Backend& b : all_backends()) {
    out.push_back({b, Strategy::kUniqueKey});
    out.push_back({b, Strategy::kRowLock});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Pairs, LockSetTest, ::testing::ValuesIn(all_cases()), CaseName());

}  // namespace
}  // namespace dblock::testing
