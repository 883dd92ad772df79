// SPDX-License-Identifier: Apache-2.0
// The model-based randomized test of the counting semaphore, and of the reader-writer lock built
// on it, on every database x driver pair.
//
// A seeded generator draws steps over three keys of two permits each, four named owners (the
// look-alikes "w", "w " and "W", and "x") and two Semaphore objects (A and B) on one pool: try
// and timed acquires (an owner holding a permit takes another: permits are not reentrant),
// permits with a long TTL and with a short one (300 ms, not renewed), releases, dropped handles,
// renew(), and sleeps past the short TTL. A small reference model predicts each outcome where
// it is certain (a short permit may or may not have expired until a sleep has passed its TTL);
// after every step the test reads the permit table (list_permits) and checks:
//   - at most two live permits per key, and every live permit row is one of the model's open
//     handles (nothing leaked by a release, a drop or a refused acquire);
//   - every open handle whose permit the database no longer holds reports lost(), and a handle
//     the model knows is held does not;
//   - tokens: never repeated within a key, rising per slot, and token % 1024 is the row's slot;
//   - outcomes: grants and refusals, kReleased / kNotHeld, and renew() where the model knows.
// The reader-writer run draws readers and writers of two ReadWriteLock objects (two readers at
// most) instead, predicts that a writer gets in only with no reader and no writer in, and a
// reader only with no writer in, and checks that the table never holds a key's writer slot and a
// reader slot at once.
//
// Environment: DBLOCK_MODEL_SECONDS (default 30; this test runs a third of it) per pair;
// DBLOCK_MODEL_SEED replays a seed (printed on failure).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/semaphore.hpp"
#include "model_env.hpp"
#include "random_model.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kPermits = 2;
constexpr milliseconds kShortTtl{300};
const std::vector<std::string> kKeys = {"k0", "k1", "k2"};
const std::vector<std::string> kOwners = {"w", "w ", "W", "x"};

// The model's view of one open handle's permit.
struct Permit {
  std::string key;
  std::string owner;
  std::string lease_id;
  std::int64_t token;
  bool short_ttl;
  // A short permit's TTL may have run out (false only until a sleep passes it): outcomes that
  // depend on it are not predicted.
  bool maybe_expired = false;
  bool expired = false;  // certainly: a sleep passed its TTL
  bool writer = false;   // a ReadWriteLock's writer (slot 0)
};

class SemaphoreModel : public RandomModel {
 public:
  // `rw`: readers and writers of ReadWriteLock objects (kPermits readers at most) instead of
  // Semaphore permits.
  SemaphoreModel(const Backend& backend, std::uint64_t seed, bool rw)
      : RandomModel(backend, seed, "semm", 8), rw_(rw) {
    for (int i = 0; i < 2; ++i) {
      if (rw_) {
        rws_.push_back(std::make_unique<ReadWriteLock>(
            *pool_, ReadWriteLockOptions{.tables = tables_, .max_readers = kPermits}));
      } else {
        locks_.push_back(std::make_unique<Semaphore>(*pool_, kPermits, SemaphoreOptions{tables_}));
      }
    }
  }

  void step() {
    const int roll = static_cast<int>(rng_() % 100);
    // A run that has not slept by step 50 (100, ...) sleeps then, so a short one (a 1 s budget
    // is about 140 steps, and 3 in 100 sleep) still lets a permit outlive its TTL.
    if (++steps_ % kForcedSleepEvery == 0 && counts["sleep"] == 0) {
      sleep_past_short_ttl();
    } else if (roll < 45 || leases_.empty()) {
      acquire(static_cast<int>(pick(2)), kOwners[pick(kOwners.size())], kKeys[pick(kKeys.size())],
              pick(4) == 0, pick(3) == 0, rw_ && pick(3) == 0);
    } else if (roll < 70) {
      release(any_handle(), true);
    } else if (roll < 82) {
      release(any_handle(), false);
    } else if (roll < 97) {
      renew(any_handle());
    } else {
      sleep_past_short_ttl();
    }
    check();
  }

 private:
  int any_handle() { return any_of(leases_); }
  // Permits of `key` (of writers, or of the rest) certainly held, and those that may be.
  std::pair<int, int> held(const std::string& key, bool writers = false) const {
    int surely = 0, maybe = 0;
    for (const auto& [_, p] : permits_) {
      if (p.key != key || p.expired || p.writer != writers) continue;
      ++(p.maybe_expired ? maybe : surely);
    }
    return {surely, maybe};
  }
  Lock& lock_of(int lock, bool writer) {
    if (!rw_) return *locks_[lock];
    return writer ? rws_[lock]->writer() : rws_[lock]->reader();
  }

  void acquire(int lock, const std::string& owner, const std::string& key, bool timed,
               bool short_ttl, bool writer) {
    ++counts[timed ? "timed acquire" : "try"];
    LockOptions options;
    options.owner = Owner::named(owner);
    options.ttl = short_ttl ? kShortTtl : milliseconds(30000);
    options.auto_renew = false;
    const std::string what = std::string(writer ? "write " : "") + "acquire(" +
                             std::to_string(lock) + ", '" + owner + "', " + key +
                             (short_ttl ? ", short" : "") + ")";
    const auto [surely, maybe] = held(key);
    const auto [writing, maybe_writing] = held(key, true);
    Lock& l = lock_of(lock, writer);
    const auto sent = std::chrono::steady_clock::now();
    std::optional<Lease> got =
        timed ? l.acquire(key, milliseconds(30), options) : l.try_acquire(key, options);
    // A writer gives slot 0 back when its lease ran out of time before the readers were seen
    // drained: with a short TTL, a call as slow as the TTL (a loaded machine) is refused rightly.
    const bool out_of_time =
        writer && short_ttl && std::chrono::steady_clock::now() - sent >= kShortTtl;
    if (writing > 0 || surely >= (writer ? 1 : kPermits)) {
      EXPECT_FALSE(got) << what << ": granted while " << writing << " writer(s) and " << surely
                        << " other(s) hold the key";
    }
    if (writing + maybe_writing == 0 && surely + maybe < (writer ? 1 : kPermits) && !out_of_time) {
      EXPECT_TRUE(got) << what << ": refused with room for it";
    }
    if (!got) return;
    ++counts[writer ? "write granted" : "granted"];
    const std::int64_t token = got->fencing_token();
    EXPECT_TRUE(tokens_[key].insert(token).second) << what << ": token " << token << " repeated";
    std::int64_t& last = last_in_slot_[{key, token % 1024}];
    EXPECT_GT(token, last) << what << ": the slot's token went back";
    last = token;
    permits_[next_handle_] = {key,       owner,     got->lease_id(), token,
                              short_ttl, short_ttl, false,           writer};
    leases_.emplace(next_handle_++, std::move(*got));
  }

  // Releases handle `h` (or drops it, without a release call).
  void release(int h, bool by_call) {
    ++counts[by_call ? "release" : "drop"];
    const Permit p = permits_.at(h);
    if (by_call) {
      const ReleaseOutcome outcome = leases_.at(h).release();
      const std::string what = "release of " + p.key + " by '" + p.owner + "'";
      if (p.expired) {
        EXPECT_EQ(outcome, ReleaseOutcome::kNotHeld) << what << " after its TTL";
      } else if (!p.maybe_expired) {
        EXPECT_EQ(outcome, ReleaseOutcome::kReleased) << what;
      } else {
        EXPECT_NE(outcome, ReleaseOutcome::kDecremented) << what;
      }
    }
    leases_.erase(h);
    permits_.erase(h);
  }

  void renew(int h) {
    ++counts["renew"];
    Permit& p = permits_.at(h);
    const bool renewed = leases_.at(h).renew(p.short_ttl ? kShortTtl : milliseconds(30000));
    if (p.expired) {
      EXPECT_FALSE(renewed) << "renew() of " << p.key << " after its TTL";
    }
    if (!p.maybe_expired) {
      EXPECT_TRUE(renewed) << "renew() of a held permit of " << p.key;
    }
    if (renewed && p.short_ttl) p.maybe_expired = true;  // for another short TTL from now
  }

  void sleep_past_short_ttl() {
    ++counts["sleep"];
    std::this_thread::sleep_for(kShortTtl + milliseconds(50));
    for (auto& [_, p] : permits_) {
      if (p.short_ttl) p.expired = true;
    }
  }

  void check() {
    ++steps;
    std::map<std::string, int> live, writing;
    std::set<std::string> held_ids;
    // The table first, lost() after: lost() only turns true with time, so a lease the table no
    // longer holds must already say so.
    const std::vector<PermitRow> rows = list_permits(*admin_, tables_);
    for (const PermitRow& row : rows) {
      EXPECT_EQ(row.lock.fencing_token % 1024, row.slot) << row.lock.key << ": token and slot";
      if (row.lock.expired) continue;
      ++(rw_ && row.slot == 0 ? writing : live)[row.lock.key];
      held_ids.insert(row.lock.lease_id);
      bool open = false;
      for (const auto& [_, p] : permits_) open = open || p.lease_id == row.lock.lease_id;
      EXPECT_TRUE(open) << row.lock.key << ": a live permit no open handle holds (step " << steps
                        << ")";
    }
    for (const auto& [key, n] : live) {
      EXPECT_LE(n, kPermits) << key << ": " << n << " live permits (step " << steps << ")";
      EXPECT_FALSE(writing.contains(key))
          << key << ": a writer and " << n << " reader(s) (step " << steps << ")";
    }
    for (auto& [h, lease] : leases_) {
      const Permit& p = permits_.at(h);
      if (!held_ids.contains(p.lease_id)) {
        EXPECT_TRUE(lease.lost()) << p.key << " held by '" << p.owner
                                  << "': the table no longer holds it, and lost() is false";
        EXPECT_TRUE(p.maybe_expired) << p.key << ": a long permit is gone from the table";
      } else if (!p.maybe_expired) {
        EXPECT_FALSE(lease.lost()) << p.key << ": a held permit reports lost()";
      }
    }
  }

  bool rw_;
  std::vector<std::unique_ptr<Semaphore>> locks_;
  std::vector<std::unique_ptr<ReadWriteLock>> rws_;
  std::map<int, Lease> leases_;
  std::map<int, Permit> permits_;
  std::map<std::string, std::set<std::int64_t>> tokens_;
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> last_in_slot_;
  int next_handle_ = 0;
  static constexpr int kForcedSleepEvery = 50;
  int steps_ = 0;
};

class SemaphoreModelTest : public ::testing::TestWithParam<Backend> {
 protected:
  // Runs random steps for a sixth of the budget.
  void run(bool rw) {
    run_random_model<SemaphoreModel>(
        rw ? "rw lock model" : "semaphore model", GetParam(), model_budget_from_env() / 6,
        [](SemaphoreModel& model) {
          EXPECT_GT(model.counts["sleep"], 0)
              << "no permit outlived its TTL: the run checked too little";
        },
        rw);
  }
};

TEST_P(SemaphoreModelTest, RandomStepsKeepTheLimitTokensAndLostTruthful) { run(false); }

TEST_P(SemaphoreModelTest, RandomReadersAndWritersNeverMeet) { run(true); }

INSTANTIATE_TEST_SUITE_P(Pairs, SemaphoreModelTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
