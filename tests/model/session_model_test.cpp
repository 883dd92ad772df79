// SPDX-License-Identifier: Apache-2.0
// The model-based randomized test of the session lock, on every database x driver pair.
//
// A seeded generator draws steps over three keys, four named owners (the look-alikes "w", "w "
// and "W", and "x") and two SessionLock objects (A and B) on one pool: try and timed acquires
// (re-entries included: a session lock is reentrant per owner through the same lock object,
// and a second lock object is a second session, which the first one excludes), releases,
// dropped handles, renew(), and the holding session killed on the server. A small reference
// model predicts each outcome; after every step the test asks the server which session holds
// each key (pg_locks / IS_USED_LOCK) and checks:
//   - exclusion and no leak: the server's holder of each key is the session of the model's live
//     hold, or nobody when the model has none;
//   - lost(): every open handle reports lost() exactly when its session is gone;
//   - tokens: every acquisition that is not a re-entry gets a token above every token handed out
//     before, on any key (they are global); re-entries share their hold's token;
//   - outcomes: grants and refusals, kDecremented / kReleased, kLeaseLost for the last release of
//     a killed hold, kConnectionLost for a re-entry onto it, and renew() as the model says.
//
// Environment: DBLOCK_MODEL_SECONDS (default 30; this test runs a third of it) per pair;
// DBLOCK_MODEL_SEED replays a seed (printed on failure).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backends.hpp"
#include "dblock/session_lock.hpp"
#include "model_env.hpp"
#include "random_model.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kKeys = {"k0", "k1", "k2"};
const std::vector<std::string> kOwners = {"w", "w ", "W", "x"};

// One session lock held by one owner through one lock object: the model's view of a hold.
struct Hold {
  int lock;
  std::string owner;
  std::string key;
  std::int64_t token;
  std::int64_t session;
  int count = 1;
  bool alive = true;
};

class SessionModel : public RandomModel {
 public:
  SessionModel(const Backend& backend, std::uint64_t seed) : RandomModel(backend, seed, "sm", 32) {
    for (int i = 0; i < 2; ++i) {
      locks_.push_back(std::make_unique<SessionLock>(*pool_, SessionLockOptions{tables_}));
    }
  }

  void step() {
    const int roll = static_cast<int>(rng_() % 100);
    if (leases_.size() >= 12) {
      release(any_handle(), true);  // each hold keeps a connection: stay within the pool
    } else if (roll < 45 || leases_.empty()) {
      acquire(static_cast<int>(pick(2)), kOwners[pick(kOwners.size())], kKeys[pick(kKeys.size())],
              pick(4) == 0);
    } else if (roll < 70) {
      release(any_handle(), true);
    } else if (roll < 82) {
      release(any_handle(), false);
    } else if (roll < 90) {
      renew(any_handle());
    } else {
      kill(any_handle());
    }
    check();
  }

 private:
  int any_handle() { return any_of(leases_); }
  std::tuple<int, std::string, std::string> id(int lock, const std::string& owner,
                                               const std::string& key) const {
    return {lock, owner, key};
  }
  std::shared_ptr<Hold> live_hold(const std::string& key) const {
    for (const auto& [_, hold] : registry_) {
      if (hold->key == key && hold->alive) return hold;
    }
    return nullptr;
  }

  void acquire(int lock, const std::string& owner, const std::string& key, bool timed) {
    ++counts[timed ? "timed acquire" : "try"];
    LockOptions options;
    options.owner = Owner::named(owner);
    const std::string what = "acquire(" + std::to_string(lock) + ", '" + owner + "', " + key + ")";
    auto call = [&] {
      return timed ? locks_[lock]->acquire(key, milliseconds(30), options)
                   : locks_[lock]->try_acquire(key, options);
    };
    auto mine = registry_.find(id(lock, owner, key));
    if (mine != registry_.end() && !mine->second->alive) {
      // A re-entry onto a killed hold.
      try {
        call();
        ADD_FAILURE() << what << " re-entered a hold whose session was killed";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << what << ": " << e.what();
      }
      return;
    }
    std::optional<Lease> got = call();
    if (mine != registry_.end()) {
      ASSERT_TRUE(got) << what << ": the owner's re-entry was refused";
      EXPECT_EQ(got->fencing_token(), mine->second->token) << what << ": a re-entry's token";
      ++mine->second->count;
      leases_.emplace(next_handle_, std::move(*got));
      holds_[next_handle_++] = mine->second;
      return;
    }
    if (auto other = live_hold(key)) {
      EXPECT_FALSE(got) << what << " granted while lock " << other->lock << " owner '"
                        << other->owner << "' holds it";
      if (got) got->release();
      return;
    }
    ASSERT_TRUE(got) << what << " refused on a key nobody holds";
    EXPECT_GT(got->fencing_token(), max_token_) << what << ": a token not above all before";
    max_token_ = std::max(max_token_, got->fencing_token());
    auto hold = std::make_shared<Hold>(Hold{lock, owner, key, got->fencing_token(),
                                            backend_.session_lock_holder(*admin_, tables_, key)});
    EXPECT_GT(hold->session, 0) << what << ": the server shows no session holding the key";
    registry_[id(lock, owner, key)] = hold;
    leases_.emplace(next_handle_, std::move(*got));
    holds_[next_handle_++] = hold;
  }

  // Releases handle `h` (or drops it, without a release call).
  void release(int h, bool by_call) {
    ++counts[by_call ? "release" : "drop"];
    auto hold = holds_.at(h);
    const bool last = hold->count == 1;
    if (by_call) {
      const std::string what = "release of " + hold->key + " by '" + hold->owner + "'";
      if (!last) {
        EXPECT_EQ(leases_.at(h).release(), ReleaseOutcome::kDecremented) << what;
      } else if (hold->alive) {
        EXPECT_EQ(leases_.at(h).release(), ReleaseOutcome::kReleased) << what;
      } else {
        try {
          leases_.at(h).release();
          ADD_FAILURE() << what << " returned although its session was killed";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << what << ": " << e.what();
        }
      }
    }
    leases_.erase(h);
    holds_.erase(h);
    if (--hold->count == 0) registry_.erase(id(hold->lock, hold->owner, hold->key));
  }

  void renew(int h) {
    ++counts["renew"];
    EXPECT_EQ(leases_.at(h).renew(), holds_.at(h)->alive) << "renew() of " << holds_.at(h)->key;
  }

  // Kills the session of handle `h`'s hold and waits until the server has freed its lock.
  void kill(int h) {
    auto hold = holds_.at(h);
    if (!hold->alive) return;
    ++counts["kill"];
    backend_.kill_session(*admin_, hold->session);
    const auto deadline = Clock::now() + milliseconds(5000);
    while (backend_.session_lock_holder(*admin_, tables_, hold->key) == hold->session) {
      ASSERT_LT(Clock::now(), deadline) << "the killed session still holds " << hold->key;
      std::this_thread::sleep_for(milliseconds(2));
    }
    hold->alive = false;
  }

  void check() {
    ++steps;
    for (const auto& key : kKeys) {
      const std::int64_t server = backend_.session_lock_holder(*admin_, tables_, key);
      auto hold = live_hold(key);
      EXPECT_EQ(server, hold ? hold->session : 0)
          << key << ": the server's holder is not the model's live hold (step " << steps << ")";
    }
    for (auto& [h, lease] : leases_) {
      const Hold& hold = *holds_.at(h);
      EXPECT_EQ(lease.lost(), !hold.alive)
          << hold.key << " held by '" << hold.owner << "': lost() " << lease.lost()
          << " although the session is " << (hold.alive ? "alive" : "gone");
    }
  }

  std::vector<std::unique_ptr<SessionLock>> locks_;
  std::map<std::tuple<int, std::string, std::string>, std::shared_ptr<Hold>> registry_;
  std::map<int, Lease> leases_;
  std::map<int, std::shared_ptr<Hold>> holds_;
  int next_handle_ = 0;
  std::int64_t max_token_ = 0;
};

class SessionModelTest : public ::testing::TestWithParam<Backend> {};

TEST_P(SessionModelTest, RandomStepsKeepExclusionTokensAndLostTruthful) {
  run_random_model<SessionModel>(
      "session model", GetParam(), model_budget_from_env() / 3, [](SessionModel& model) {
        EXPECT_GT(model.counts["kill"], 0) << "no session was killed: the run checked too little";
      });
}

INSTANTIATE_TEST_SUITE_P(Pairs, SessionModelTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
