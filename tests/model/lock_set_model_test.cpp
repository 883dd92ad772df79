// SPDX-License-Identifier: Apache-2.0
// The model-based randomized test of lock sets (lock_set.hpp) over the unique-key lock, on every
// database x driver pair.
//
// A seeded generator draws steps over four keys, four named owners (the look-alikes "w", "w "
// and "W" with 30 s leases, and "x" with 300 ms leases that are not renewed) and two
// UniqueKeyLock objects (A and B) on one table: sets of two or three keys asked for in a random
// order, a key sometimes twice (try_acquire_all, or acquire_all waiting 30 ms), single keys
// (try_acquire), with_locks whose critical section reads the lock table, releases of a set or a
// single lease, dropped handles, renew() of one lease of a set, and sleeps past the short TTL.
// An owner asking for a set that holds some of its keys already re-enters them.
//
// The outcome of each step is predicted from the lock table as last read, on the database's
// clock (lock_truth.hpp), where it is certain over the whole call; otherwise either outcome is
// accepted. After every step the test reads the table and checks:
//   - all or nothing: every live row is held by open handles of its owner with its token, as
//     many as its hold_count (a refused set that kept a key, or a release that left one, shows
//     up as a row nobody holds);
//   - exclusion: at most one owner's leases of a key report !lost();
//   - lost(): a lease whose row is gone, expired or another tenure's reports lost(), and so does
//     its set; a long lease whose row is its own does not;
//   - tokens: a set's key that is not a re-entry gets a token above every token the key had;
//     a re-entry keeps the token of the owner's hold;
//   - with_locks runs its function with every key of the set held by the owner, and returns its
//     result;
//   - outcomes: grants and refusals, LeaseSet::release() (kReleased, kDecremented when a key
//     stays held by another hold of the owner, kNotHeld when any key was lost) and renew().
//
// Environment: DBLOCK_MODEL_SECONDS (default 30; this test runs a third of it) per pair;
// DBLOCK_MODEL_SEED replays a seed (printed on failure).
#include <gtest/gtest.h>

#include <algorithm>
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
#include "dblock/lock_set.hpp"
#include "dblock/unique_key_lock.hpp"
#include "lock_truth.hpp"
#include "model_env.hpp"
#include "random_model.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kShortTtl{300};
constexpr milliseconds kLongTtl{30000};
// Scheduling jitter allowed around a row's expiry, and the longest a call is assumed to take.
constexpr milliseconds kMargin{60};
constexpr milliseconds kCallSlack{150};
constexpr milliseconds kWait{30};
const std::vector<std::string> kKeys = {"k0", "k1", "k2", "k3"};
const std::vector<std::string> kOwners = {"w", "w ", "W", "x"};  // "x": short leases

// One key of an open handle.
struct Member {
  std::string key;
  std::int64_t token = 0;
  ModelClock::time_point sent{};  // when its acquire or latest renew() was sent
};

// An open handle: a set, or a single lease.
struct Handle {
  std::string owner;
  std::vector<Member> members;  // keys ascending, each once
  std::optional<LeaseSet> set;
  std::optional<Lease> single;
  Lease& lease(const std::string& key) { return set ? set->lease(key) : *single; }
  bool short_ttl() const { return owner == "x"; }
};

std::string show(const std::vector<std::string>& keys) {
  std::string out = "{";
  for (const auto& k : keys) out += (out.size() > 1 ? "," : "") + k;
  return out + "}";
}

class LockSetModel : public RandomModel {
 public:
  LockSetModel(const Backend& backend, std::uint64_t seed) : RandomModel(backend, seed, "lsm", 6) {
    for (int i = 0; i < 2; ++i) {
      UniqueKeyLockOptions options;
      options.tables = tables_;
      locks_.push_back(std::make_unique<UniqueKeyLock>(*pool_, options));
    }
    for (const auto& name : kOwners) owners_.emplace(name, Owner::named(name));
    truth_ = read_truth(*admin_, tables_);
  }

  void step() {
    ++steps;
    const int roll = static_cast<int>(pick(100));
    // A third of the steps go to an owner holding something, which then re-enters its keys.
    const std::string owner = handles_.empty() || pick(3) != 0 ? kOwners[pick(kOwners.size())]
                                                               : handles_.at(any_handle()).owner;
    if (roll < 35 || handles_.empty()) {
      acquire(owner, some_keys(), pick(3) == 0);
    } else if (roll < 47) {
      acquire(owner, {kKeys[pick(kKeys.size())]}, false, /*single=*/true);
    } else if (roll < 55) {
      with_locks(owner, some_keys());
    } else if (roll < 75) {
      release(any_handle());
    } else if (roll < 83) {
      drop(any_handle());
    } else if (roll < 95) {
      renew(any_handle());
    } else {
      ++counts["sleep"];
      std::this_thread::sleep_for(kShortTtl + kMargin);
    }
    check();
  }

 private:
  int any_handle() { return any_of(handles_); }
  // Two or three keys in a random order, now and then one of them twice.
  std::vector<std::string> some_keys() {
    std::vector<std::string> keys = kKeys;
    std::shuffle(keys.begin(), keys.end(), rng_);
    keys.resize(2 + pick(2));
    if (pick(5) == 0) keys.push_back(keys.front());
    return keys;
  }
  LockOptions options_for(const std::string& owner) const {
    LockOptions options;
    options.owner = owners_.at(owner);
    options.ttl = owner == "x" ? kShortTtl : kLongTtl;
    options.auto_renew = false;
    return options;
  }
  const TruthRow* row(const std::string& key) const { return truth_.find(key); }
  // The row of `key` has certainly not expired by `until` (it may have been released).
  bool live_until(const TruthRow& r, ModelClock::time_point until) const {
    return r.forever || truth_.earliest_expiry(r) > until + kMargin;
  }
  // The row of `key` certainly expired before now.
  bool expired_now(const TruthRow& r) const {
    return !r.forever && truth_.latest_expiry(r) + kMargin < ModelClock::now();
  }
  // Whether another owner than `owner` certainly holds `key` until `until` / certainly holds
  // it no longer.
  bool other_holds(const std::string& key, const std::string& owner,
                   ModelClock::time_point until) const {
    const TruthRow* r = row(key);
    return r != nullptr && r->owner != owners_.at(owner) && live_until(*r, until);
  }
  bool free_for(const std::string& key, const std::string& owner) const {
    const TruthRow* r = row(key);
    return r == nullptr || r->owner == owners_.at(owner) || expired_now(*r);
  }

  // Predicts a set's grant (nullopt when uncertain) for a call that may last until `until`.
  std::optional<bool> predict(const std::string& owner, const std::vector<std::string>& keys,
                              ModelClock::time_point until) const {
    bool all_free = true;
    for (const auto& key : keys) {
      if (other_holds(key, owner, until)) return false;
      all_free = all_free && free_for(key, owner);
    }
    if (all_free) return true;
    return std::nullopt;
  }

  // Checks a granted lease's token against the key's history and records it.
  void check_token(const std::string& what, const std::string& owner, const std::string& key,
                   std::int64_t token, ModelClock::time_point sent) {
    const TruthRow* r = row(key);
    const bool own_row = r != nullptr && r->owner == owners_.at(owner) && !r->forever;
    if (own_row && live_until(*r, sent + kCallSlack)) {
      EXPECT_EQ(token, r->fencing_token) << what << ": re-entry of " << key << " changed its token";
    } else if (!(own_row && token == r->fencing_token)) {
      EXPECT_GT(token, max_token_[key]) << what << ": " << key << "'s token did not rise";
    }
    max_token_[key] = std::max(max_token_[key], token);
  }

  void add(const std::string& owner, std::vector<std::string> keys, ModelClock::time_point sent,
           std::optional<LeaseSet> set, std::optional<Lease> single) {
    Handle h{owner, {}, std::move(set), std::move(single)};
    for (const auto& key : keys) h.members.push_back({key, h.lease(key).fencing_token(), sent});
    handles_.emplace(next_handle_++, std::move(h));
  }

  // A set whose short lease ran out of time before its last key was taken is given back: a
  // call sent at `sent` that took as long as the short TTL (a loaded machine) may rightly
  // refuse what the table promised.
  static bool ran_out(const std::string& owner, ModelClock::time_point sent) {
    return owner == "x" && ModelClock::now() - sent >= kShortTtl;
  }

  void acquire(const std::string& owner, const std::vector<std::string>& asked, bool timed,
               bool single = false) {
    const std::string what = std::string(single  ? "try_acquire"
                                         : timed ? "acquire_all"
                                                 : "try_all") +
                             "(" + std::to_string(lock_) + ", '" + owner + "', " + show(asked) +
                             ")";
    ++counts[single ? "single" : "set"];
    std::vector<std::string> keys = asked;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    const auto sent = ModelClock::now();
    const auto expected =
        predict(owner, keys, sent + (timed ? kWait : milliseconds(0)) + kCallSlack);
    Lock& lock = *locks_[lock_];
    lock_ = 1 - lock_;
    std::optional<LeaseSet> set;
    std::optional<Lease> lease;
    if (single) {
      lease = lock.try_acquire(keys.front(), options_for(owner));
    } else if (timed) {
      set = acquire_all(lock, asked, kWait, options_for(owner));
    } else {
      set = try_acquire_all(lock, asked, options_for(owner));
    }
    const bool got = single ? lease.has_value() : set.has_value();
    if (expected && !(*expected && !got && ran_out(owner, sent))) {
      EXPECT_EQ(got, *expected) << what << (got ? ": granted" : ": refused");
    }
    if (!got) return;
    ++counts[single ? "single granted" : "set granted"];
    if (set) {
      EXPECT_EQ(set->leases().size(), keys.size()) << what << ": leases in the set";
      for (const auto& key : keys) {
        EXPECT_EQ(set->lease(key).key(), key) << what;
        check_token(what, owner, key, set->lease(key).fencing_token(), sent);
      }
    } else {
      check_token(what, owner, keys.front(), lease->fencing_token(), sent);
    }
    add(owner, keys, sent, std::move(set), std::move(lease));
  }

  void with_locks(const std::string& owner, const std::vector<std::string>& asked) {
    ++counts["with_locks"];
    const std::string what = "with_locks('" + owner + "', " + show(asked) + ")";
    const auto sent = ModelClock::now();
    const auto expected = predict(owner, asked, sent + kWait + kCallSlack);
    std::optional<int> out;
    try {
      out = dblock::with_locks(*locks_[0], asked, kWait, options_for(owner), [&](LeaseSet& set) {
        // Inside: every key of the set is the owner's in the table, with the set's token.
        const Truth inside = read_truth(*admin_, tables_);
        for (const auto& key : asked) {
          const TruthRow* r = inside.find(key);
          EXPECT_TRUE(r != nullptr && r->owner == owners_.at(owner) &&
                      r->fencing_token == set.lease(key).fencing_token() && r->remaining_ms > 0)
              << what << ": " << key << " is not held by the set inside its function";
        }
        return 7;
      });
    } catch (const Error& e) {
      // Only a short lease can run out meanwhile (the function is quick).
      EXPECT_TRUE(e.code() == ErrorCode::kLeaseLost && owner == "x") << what << ": " << e.what();
      return;
    }
    if (expected && !(*expected && !out && ran_out(owner, sent))) {
      EXPECT_EQ(out.has_value(), *expected) << what;
    }
    if (out) {
      EXPECT_EQ(*out, 7) << what << ": not the function's result";
    }
  }

  // Whether `m`'s lease certainly holds its row until `until` (true), certainly not (false).
  std::optional<bool> holds(const Handle& h, const Member& m, ModelClock::time_point until) const {
    const TruthRow* r = row(m.key);
    if (r == nullptr || r->owner != owners_.at(h.owner) || r->fencing_token != m.token ||
        expired_now(*r)) {
      return false;
    }
    if (live_until(*r, until)) return true;
    return std::nullopt;
  }

  void release(int id) {
    ++counts["release"];
    Handle& h = handles_.at(id);
    const auto until = ModelClock::now() + kCallSlack;
    bool any_gone = false, all_held = true, others = false;
    for (const Member& m : h.members) {
      const std::optional<bool> held = holds(h, m, until);
      any_gone = any_gone || held == false;
      all_held = all_held && held == true;
      others = others || (held == true && row(m.key)->hold_count > 1);
    }
    const ReleaseOutcome outcome = h.set ? h.set->release() : h.single->release();
    const std::string what = "release of '" + h.owner + "' " + std::to_string(id);
    if (any_gone) {
      EXPECT_EQ(outcome, ReleaseOutcome::kNotHeld) << what << ": a key was lost";
    } else if (all_held) {
      EXPECT_EQ(outcome, others ? ReleaseOutcome::kDecremented : ReleaseOutcome::kReleased) << what;
    } else {
      EXPECT_NE(outcome, ReleaseOutcome::kConflict) << what;
    }
    ++counts[std::string(to_string(outcome))];
    handles_.erase(id);
  }

  void drop(int id) {
    ++counts["drop"];
    handles_.erase(id);
  }

  // renew() of one lease of the handle (of a set: one of its keys, by lease(key)).
  void renew(int id) {
    ++counts["renew"];
    Handle& h = handles_.at(id);
    Member& m = h.members[pick(h.members.size())];
    const std::optional<bool> held = holds(h, m, ModelClock::now() + kCallSlack);
    const auto sent = ModelClock::now();
    const bool renewed = h.lease(m.key).renew(h.short_ttl() ? kShortTtl : kLongTtl);
    if (held) {
      EXPECT_EQ(renewed, *held) << "renew() of " << m.key << " by '" << h.owner << "'";
    }
    if (renewed) m.sent = sent;
  }

  void check() {
    truth_ = read_truth(*admin_, tables_);
    const auto now = ModelClock::now();
    // All or nothing: every live row is held by as many open leases as its hold_count.
    for (const auto& [key, r] : truth_.rows) {
      if (r.remaining_ms <= kMargin.count()) continue;
      std::int64_t open = 0;
      for (const auto& [_, h] : handles_) {
        for (const Member& m : h.members) {
          if (m.key == key && owners_.at(h.owner) == r.owner && m.token == r.fencing_token) ++open;
        }
      }
      EXPECT_EQ(open, r.hold_count)
          << key << ": live row of token " << r.fencing_token << " with hold_count " << r.hold_count
          << ", open leases " << open << " (step " << steps << ")";
    }
    // lost(), member by member, then the set's; exclusion among leases that are not lost.
    std::map<std::string, std::set<std::string>> holders;
    for (auto& [id, h] : handles_) {
      bool any_lost = false;
      for (const Member& m : h.members) {
        const bool lost = h.lease(m.key).lost();
        any_lost = any_lost || lost;
        if (!lost) holders[m.key].insert(h.owner);
        const std::optional<bool> held = holds(h, m, now);
        if (held == false) {
          EXPECT_TRUE(lost) << m.key << " of '" << h.owner << "' (handle " << id
                            << "): its row is gone or another's, and lost() is false (step "
                            << steps << ")";
        }
        if (held == true && !h.short_ttl()) {
          EXPECT_FALSE(lost) << m.key << " of '" << h.owner << "': held, and lost() is true";
        }
      }
      if (h.set && any_lost) {
        EXPECT_TRUE(h.set->lost()) << "a set with a lost lease";
      }
    }
    for (const auto& [key, owners] : holders) {
      EXPECT_LE(owners.size(), 1u) << key << ": leases of " << owners.size()
                                   << " owners report !lost() (step " << steps << ")";
    }
  }

  std::vector<std::unique_ptr<UniqueKeyLock>> locks_;
  std::map<std::string, Owner> owners_;
  Truth truth_;
  std::map<int, Handle> handles_;
  std::map<std::string, std::int64_t> max_token_;
  int next_handle_ = 0;
  int lock_ = 0;  // the lock object the next acquire goes through (A and B in turn)
};

class LockSetModelTest : public ::testing::TestWithParam<Backend> {};

TEST_P(LockSetModelTest, RandomSetsAreAllOrNothingAndKeepTheGuarantees) {
  run_random_model<LockSetModel>(
      "lock set model", GetParam(), model_budget_from_env() / 3, [](LockSetModel& model) {
        EXPECT_GT(model.counts["set granted"], 0)
            << "no set was granted: the run checked too little";
        EXPECT_GT(model.counts["decremented"], 0) << "no set re-entered a held key";
      });
}

INSTANTIATE_TEST_SUITE_P(Pairs, LockSetModelTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
