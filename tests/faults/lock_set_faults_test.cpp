// SPDX-License-Identifier: Apache-2.0
// Lock sets (lock_set.hpp) under faults, over every strategy. All or nothing: a set whose later
// key fails with an error gives back the keys it already took, at once. Never two holders: a
// set whose connections are cut mid-hold reports itself lost before another owner gets any of
// its keys, and with_locks then throws kLeaseLost instead of returning fn's result. No
// deadlock: sets taken in opposite orders while the server kills their sessions all make
// progress, and their recorded histories (history.hpp) never hold a key twice.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "connection_fault_test.hpp"
#include "dblock/lock_set.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"
#include "tagged_pool.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

// A held set in a history: each lease recorded as acquired, then renewed every third of the TTL
// on a thread of its own (the set's leases are taken without auto_renew), so the history knows
// when each renewal was sent, as RecordedHolder does for one lease. The set must outlive it and
// stay as it is; its owner's thread may ask the set lost() meanwhile.
class RecordedSet {
 public:
  RecordedSet(LeaseSet& set, HistoryWriter& history, std::string client, std::int64_t sent_us,
              milliseconds ttl)
      : history_(history), client_(std::move(client)), ttl_(ttl) {
    const std::int64_t reply = monotonic_us();
    for (const Lease& held : set.leases()) {
      leases_.push_back(&set.lease(held.key()));
      valid_until_us_.push_back(sent_us + ttl.count() * 1000);
      history_.acquired(client_, held.key(), held.fencing_token(), reply, sent_us, ttl.count());
    }
    renewer_ = std::thread([this] { renew_loop(); });
  }
  ~RecordedSet() { stop(); }
  RecordedSet(const RecordedSet&) = delete;
  RecordedSet& operator=(const RecordedSet&) = delete;

  // One TTL after the latest successful acquire or renew of the lease renewed longest ago.
  std::int64_t valid_until_us() {
    std::lock_guard lock(mu_);
    return *std::min_element(valid_until_us_.begin(), valid_until_us_.end());
  }
  // Stops renewing (waits for a renewal in flight: heal a blackholed connection first).
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (renewer_.joinable()) renewer_.join();
  }

 private:
  void renew_loop() {
    std::vector<bool> gone(leases_.size(), false);
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, ttl_ / 3, [&] { return stop_; })) {
      lock.unlock();
      for (std::size_t i = 0; i < leases_.size(); ++i) {
        if (gone[i]) continue;
        const std::int64_t sent = monotonic_us();
        try {
          if (leases_[i]->renew(ttl_)) {
            history_.renewed(client_, leases_[i]->key(), leases_[i]->fencing_token(), sent,
                             ttl_.count());
            std::lock_guard until(mu_);
            valid_until_us_[i] = sent + ttl_.count() * 1000;
          } else {
            gone[i] = true;  // renewing again cannot bring it back
          }
        } catch (const Error&) {
          // The connection broke: try again next time; the TTL decides.
        }
      }
      lock.lock();
    }
  }

  HistoryWriter& history_;
  const std::string client_;
  const milliseconds ttl_;
  std::vector<Lease*> leases_;
  std::mutex mu_;  // guards valid_until_us_ and stop_
  std::vector<std::int64_t> valid_until_us_;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread renewer_;
};

class LockSetFaultTest : public ConnectionFaultTest {
 protected:
  // Whether the server shows `key` held: a live row, or a session holding its session lock.
  // Optimistic leases leave nothing held (the strategy keeps no row in `locks`).
  bool held_on_server(const std::string& key) {
    return strategy().lock_row ? live_rows(key) > 0 : session_holding(key) != 0;
  }
};

// Scenario 1 for sets. Through the proxy, the request of the set's last key (in the set's
// order) is dropped, the retry's too: the set throws, and the two keys it took before are free
// for another owner at once (they were given back as the error left the set, not left to a TTL
// or a session end), their connections are back in the pool, and the same set is taken again.
TEST_P(LockSetFaultTest, ASetWhoseLastKeyFailsGivesBackTheKeysItTookAtOnce) {
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases exclude nobody, so a key the failed set kept would keep nobody out; "
        "checked instead that the set throws, that another owner takes and commits each key, "
        "and that the failed set gave its transactions' connections back (the same "
        "3-connection pool takes the whole set again, and it is released with kReleased)");
  }
  constexpr int kDrops = 3;  // more than the strategy's one retry
  // A connection for each key: a key kept by a transaction or a session would keep its
  // connection, and the set could not be taken again (kPoolExhausted).
  auto cut = cut_off_lock({.max_size = 3, .acquire_timeout = milliseconds(2000)});
  auto other = make_lock();
  // Taken in the order alpha, bravo, charlie: the key asked for first is taken last.
  const std::vector<std::string> keys{"set-charlie", "set-alpha", "set-bravo"};
  const std::string needle = strategy().lock_row ? keys[0] : session_lock_name(keys[0]);
  const LockOptions me = owned_by("set");
  {
    // The statements run once (prepared; a semaphore stores its limit): the drop hits the take.
    auto warm = try_acquire_all(*cut.lock, keys, me);
    ASSERT_TRUE(warm);
    EXPECT_EQ(warm->release(), ReleaseOutcome::kReleased);
  }
  for (const bool wait : {false, true}) {
    SCOPED_TRACE(wait ? "acquire_all" : "try_acquire_all");
    const int cuts_before = cut.proxy.cuts();
    cut.proxy.drop_request_containing(needle, kDrops);
    const auto code = error_of(
        [&] {
          if (wait) {
            acquire_all(*cut.lock, keys, milliseconds(2000), me);
          } else {
            try_acquire_all(*cut.lock, keys, me);
          }
        },
        wait ? "acquire_all whose last key is dropped"
             : "try_acquire_all whose last key is dropped");
    cut.proxy.drop_request_containing(needle, 0);  // disarmed: drops a retry did not use
    EXPECT_EQ(code, ErrorCode::kConnectionLost);
    EXPECT_GT(cut.proxy.cuts(), cuts_before) << "the last key's request was never dropped";
    for (const auto& key : keys) {
      EXPECT_FALSE(held_on_server(key)) << key << " is still held after the set failed";
    }
    for (const auto& key : keys) {
      auto taken = other->try_acquire(key, owned_by("other"));
      EXPECT_TRUE(taken) << "another owner could not take " << key << " after the set failed";
      if (taken) {
        EXPECT_EQ(taken->release(), ReleaseOutcome::kReleased);
      }
    }
    try {
      auto again = try_acquire_all(*cut.lock, keys, me);
      ASSERT_TRUE(again) << "the failed set's own lock cannot take the set again";
      EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
    } catch (const Error& e) {
      ADD_FAILURE() << "the failed set kept its connections: " << e.what();
    }
  }
}

// Scenario 6 for sets, inside with_locks. The connections of a held set stop answering (the
// proxy blackhole). With a TTL, the set reports lost once the TTL has passed since its last
// renewal was sent, and not one of its keys goes to another owner before then (the history
// check); without one (row lock, session lock), nobody gets the keys while the server keeps the
// sessions, and once the connections are closed the set already reports lost when another owner
// gets a key. Either way with_locks then throws kLeaseLost, never fn's result.
TEST_P(LockSetFaultTest, ASetCutOffMidHoldIsLostBeforeItsKeysGoElsewhereAndWithLocksThrows) {
  constexpr int kTtlMs = 1500, kDeadMs = 1000;
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases have no TTL and exclude nobody, so no second holder is kept out; "
        "checked instead that the set does not report lost while its connections only hang, "
        "that it does once they are closed, that with_locks then throws kLeaseLost, and that "
        "the writes made in its transactions are rolled back");
  } else if (!strategy().ends_with_ttl) {
    not_applicable(
        "no TTL: a cut-off set keeps its keys while the server keeps its sessions; checked "
        "instead that nobody gets them during 1 s of blackhole and the set is not reported "
        "lost, that once the connections are closed the set reports lost before another owner "
        "gets each key, that with_locks throws kLeaseLost, and (row lock) that the writes made "
        "in its transactions are rolled back");
  }
  auto cut = cut_off_lock({.max_size = 4});
  auto lock = make_lock();
  HistoryWriter history(new_history("set-cut-off"));
  const std::vector<std::string> keys{"cut-a", "cut-b", "cut-c"};
  std::vector<std::unique_ptr<RecordedHolder>> takers;
  for (const auto& key : keys) {
    takers.push_back(
        std::make_unique<RecordedHolder>(*lock, history, "taker", key, milliseconds(30000)));
  }
  LockOptions options = owned_by("set");
  options.ttl = milliseconds(kTtlMs);
  options.auto_renew = false;  // RecordedSet renews, so the history knows when
  std::int64_t lost_seen = -1, valid_until = -1;
  std::vector<std::optional<bool>> lost_when_taken(keys.size());
  const std::int64_t sent = monotonic_us();
  const auto code = error_of(
      [&] {
        with_locks(*cut.lock, keys, milliseconds(5000), options, [&](LeaseSet& set) {
          RecordedSet recorded(set, history, "set", sent, milliseconds(kTtlMs));
          if (strategy().transactional) {
            std::int64_t id = 100;
            for (const Lease& held : set.leases()) {
              insert_mark(*held.connection(), tables_, id++, "set");
            }
          }
          std::this_thread::sleep_for(milliseconds(kTtlMs / 2));  // a renewal gets through
          cut.proxy.set_blackhole(true);
          if (!strategy().ends_with_ttl) {
            const std::int64_t dead_until = monotonic_us() + kDeadMs * 1000;
            while (strategy().exclusive && monotonic_us() < dead_until) {
              for (auto& taker : takers) {
                EXPECT_FALSE(taker->acquire(milliseconds(0)))
                    << "another owner got a key while the server still had the set's session";
              }
              std::this_thread::sleep_for(milliseconds(50));
            }
            if (!strategy().exclusive) std::this_thread::sleep_for(milliseconds(kDeadMs));
            EXPECT_FALSE(set.lost()) << "a set without a TTL was reported lost by a timer";
            cut.heal();  // a hung renewal fails; the server ends the sessions
          }
          // The takers try as fast as they can: the moment one gets a key, the set must already
          // know it lost it.
          const std::int64_t deadline = monotonic_us() + 10'000'000;
          const auto all_taken = [&] {
            return std::all_of(takers.begin(), takers.end(), [](auto& t) { return t->held(); });
          };
          while ((lost_seen < 0 || !all_taken()) && monotonic_us() < deadline) {
            if (lost_seen < 0 && set.lost()) lost_seen = monotonic_us();
            for (std::size_t i = 0; i < keys.size(); ++i) {
              if (!takers[i]->held() && takers[i]->acquire(milliseconds(0))) {
                lost_when_taken[i] = set.lost() && set.lease(keys[i]).lost();
              }
            }
            std::this_thread::sleep_for(milliseconds(5));
          }
          valid_until = recorded.valid_until_us();
          if (strategy().ends_with_ttl) cut.heal();
          recorded.stop();
          return 42;
        });
      },
      "with_locks on a set cut off mid-hold");
  EXPECT_EQ(code, ErrorCode::kLeaseLost) << "with_locks did not report the set lost";
  EXPECT_GE(lost_seen, 0) << "the cut-off set never reported lost";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_TRUE(takers[i]->held()) << "nobody got " << keys[i] << " after the set was cut off";
    if (strategy().exclusive) {
      EXPECT_EQ(lost_when_taken[i], true)
          << "another owner got " << keys[i] << " while the cut-off set still looked held";
    }
  }
  if (strategy().ends_with_ttl && lost_seen >= 0) {
    // lost() turns true when the TTL since the last renewal has passed (polled every few ms).
    EXPECT_GE(lost_seen, valid_until);
    EXPECT_LE(lost_seen - valid_until, 200'000);
    std::printf("[ blackhole] %s: the set reported lost %lld ms after its last renewal was sent\n",
                backend().name.c_str(),
                static_cast<long long>((lost_seen - valid_until) / 1000 + kTtlMs));
  }
  for (auto& taker : takers) EXPECT_EQ(taker->release(), "released");
  if (strategy().transactional) {
    EXPECT_EQ(rows_written_by("set"), 0) << "the cut-off set's writes were committed";
  }
  check_histories();  // no taker's hold starts before the set's lease on its key ran out
}

// Sets over overlapping keys in opposite orders ({a,b}, {b,a}, {c,b,a}, {c,b}), one thread each,
// for 2 s (and on, up to 10 s, until each thread has had its set) while every session of their
// pool is killed every 200 ms. Killed sessions may fail an acquire or a release (counted); but
// every thread gets its set, no wait outlasts its timeout, no wait runs out while no set at all
// is granted (two sets holding what the other waits for would stall every set here: each holds
// b), no set comes back with a key already lost on the way, and the history holds no key twice
// at once. A set found lost just after acquire_all returned is a lie only if no kill could have
// landed after acquire_all's own last look: none was under way when the test looked, and the
// last one had ended over kLateKillMs before acquire_all returned (time for a killed session's
// close to reach the client, and for the thread to be descheduled between that look and the
// return); sets lost to a later kill are counted apart, as lost_at_return. LockSetTest's
// AKeyLostBeforeTheLastIsTakenGivesTheSetBackAndAWaitAsksAgain checks that look exactly.
TEST_P(LockSetFaultTest,
       OverlappingSetsInOppositeOrdersUnderSessionKillsNeitherDeadlockNorOverlap) {
  constexpr int kRunMs = 2000, kKillEveryMs = 200, kTtlMs = 1000, kWaitMs = 2000, kSlackMs = 1000;
  // The run goes on past kRunMs, up to kLongestRunMs, until every thread has had its set once:
  // a strategy that is not fair may pass one waiter over for a whole wait (the others come back
  // every 20 to 40 ms), and that waiter needs more than one wait to show that it is not stuck.
  constexpr int kLongestRunMs = 10'000;
  // Work between sets, 20 to 40 ms (threads out of step), so that a polling waiter finds a gap.
  constexpr int kPauseMs = 20;
  constexpr std::int64_t kLateKillMs = 10;
  if (!strategy().exclusive) {
    not_applicable(
        "optimistic leases never wait and exclude nobody, so sets cannot deadlock or overlap; "
        "checked instead, under the same kills, that every thread's sets are granted again and "
        "again and no version is committed twice (the compare-and-set history)");
  }
  TaggedPool tagged(backend(), 16);  // its sessions are killed, no other test's
  auto lock = make_lock(tagged.pool());
  HistoryWriter history(new_history("sets"));
  const std::vector<std::vector<std::string>> sets{
      {"a", "b"}, {"b", "a"}, {"c", "b", "a"}, {"c", "b"}};
  struct Tally {
    int grants = 0, timeouts = 0, stalled = 0, returned_lost = 0, lost_at_return = 0, errors = 0;
    std::int64_t longest_wait_us = 0;
    std::map<ErrorCode, int> codes;
  };
  std::vector<Tally> tallies(sets.size());
  std::atomic<int> granted{0};         // sets granted, over every thread
  std::atomic<std::size_t> served{0};  // threads granted their set at least once
  std::atomic<bool> stop{false};
  // When the killer last began and last finished a round of kills (monotonic µs).
  std::atomic<std::int64_t> kill_began{-1}, kill_ended{-1};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sets.size(); ++t) {
    threads.emplace_back([&, t] {
      const std::string client = "t" + std::to_string(t);
      LockOptions options = owned_by(client);
      options.ttl = milliseconds(kTtlMs);
      Tally& tally = tallies[t];
      const auto fault = [&](const Error& e) {
        ++tally.errors;
        ++tally.codes[e.code()];
      };
      std::minstd_rand jitter(static_cast<unsigned>(t + 1));
      for (; !stop;
           std::this_thread::sleep_for(milliseconds(kPauseMs + jitter() % (kPauseMs + 1)))) {
        const int granted_before = granted.load();
        const std::int64_t sent = monotonic_us();
        std::optional<LeaseSet> set;
        try {
          set = acquire_all(*lock, sets[t], milliseconds(kWaitMs), options);
        } catch (const Error& e) {
          fault(e);
          continue;
        }
        const std::int64_t reply = monotonic_us();
        tally.longest_wait_us = std::max(tally.longest_wait_us, reply - sent);
        if (!set) {
          ++tally.timeouts;
          if (reply - sent >= kWaitMs * 1000 && granted.load() == granted_before) ++tally.stalled;
          continue;
        }
        ++granted;
        const std::int64_t began = kill_began.load(), ended = kill_ended.load();
        if (set->lost()) {
          // A careful caller does not rely on it (nor does the history); the guarantee says a
          // set holds every key, so this must not happen unless a kill came too late for
          // acquire_all to see.
          const bool kill_under_way = began > ended;
          const bool late_kill = ended >= reply - kLateKillMs * 1000;
          ++(kill_under_way || late_kill ? tally.lost_at_return : tally.returned_lost);
          try {
            set->release();
          } catch (const Error& e) {
            fault(e);
          }
          continue;
        }
        if (++tally.grants == 1) ++served;
        std::vector<std::pair<std::string, std::int64_t>> held;
        for (const Lease& lease : set->leases()) {
          held.emplace_back(lease.key(), lease.fencing_token());
          history.acquired(client, lease.key(), lease.fencing_token(), reply, sent, kTtlMs);
        }
        std::this_thread::sleep_for(milliseconds(5));  // the critical section
        const std::int64_t release_sent = monotonic_us();
        std::string outcome = "error";
        try {
          outcome = to_string(set->release());
        } catch (const Error& e) {
          fault(e);
        }
        // The set's outcome sums up its leases': only kReleased says that each was given back
        // (optimistic: committed). Any other is recorded for each lease, which may shorten a
        // hold in the history (or drop a commit) but never makes up an overlap.
        for (const auto& [key, token] : held) {
          history.released(client, key, token, release_sent, outcome);
        }
      }
    });
  }
  int kills = 0;
  const std::int64_t started = monotonic_us();
  const auto running = [&] {
    const std::int64_t ran = monotonic_us() - started;
    return ran < kRunMs * 1000 || (served.load() < sets.size() && ran < kLongestRunMs * 1000);
  };
  while (running()) {
    std::this_thread::sleep_for(milliseconds(kKillEveryMs));
    kill_began = monotonic_us();
    kills += tagged.kill_sessions(*conn_);
    kill_ended = monotonic_us();
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  EXPECT_GT(kills, 0) << "no session was killed";
  for (std::size_t t = 0; t < sets.size(); ++t) {
    const Tally& tally = tallies[t];
    std::string codes;
    for (const auto& [code, n] : tally.codes) {
      codes += " " + std::string(to_string(code)) + "=" + std::to_string(n);
      EXPECT_TRUE(code == ErrorCode::kConnectionLost || code == ErrorCode::kLeaseLost ||
                  code == ErrorCode::kCommitInDoubt)
          << "t" << t << ": " << to_string(code) << " is not what a killed session causes";
    }
    std::printf(
        "[ sets     ] %s t%zu (%zu keys): grants=%d timeouts=%d stalled=%d returned_lost=%d "
        "lost_at_return=%d longest_wait=%lld ms errors=%d%s (%d kills)\n",
        backend().name.c_str(), t, sets[t].size(), tally.grants, tally.timeouts, tally.stalled,
        tally.returned_lost, tally.lost_at_return,
        static_cast<long long>(tally.longest_wait_us / 1000), tally.errors, codes.c_str(), kills);
    EXPECT_GT(tally.grants, 0) << "t" << t << " never got its set";
    EXPECT_EQ(tally.stalled, 0) << "t" << t << " waited out its timeout while no set was granted";
    EXPECT_EQ(tally.returned_lost, 0)
        << "t" << t << ": acquire_all returned a set with a key it had already lost";
    EXPECT_LE(tally.longest_wait_us, (kWaitMs + kSlackMs) * 1000)
        << "t" << t << " waited past its timeout";
  }
  check_histories();
}

INSTANTIATE_TEST_SUITE_P(Faults, LockSetFaultTest, ::testing::ValuesIn(fault_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
