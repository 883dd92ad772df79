// SPDX-License-Identifier: Apache-2.0
// Election hand-offs (Election::hand_off, Term::hand_off) against every database x driver pair,
// from the guarantee's side: the named candidate leads the next term, with a higher number and
// its own value, and while the name moves no one else can take it (an outsider trying all along
// never gets it) and no two candidates' work runs at once; the handed term ends as any other
// (the next candidate takes over at once, not after a TTL); a hand-off to a candidate that does
// not wait gives the name back to all and says so; an unnamed hand-off goes to the candidate
// waiting longest; a candidate that died after registering keeps the name until its TTL and no
// one has it twice; before migration 0010 candidates campaign as before.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/election.hpp"
#include "dblock/error.hpp"
#include "dblock/observer.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "term_history.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The terms a candidate's observer saw end: why, and to whom a hand-off went.
class Ends : public Observer {
 public:
  void term_ended(const TermEvent& e) override {
    std::lock_guard lock(mu_);
    ends_.push_back({e.term, e.why, std::string(e.handed_to)});
  }
  struct End {
    std::int64_t term;
    TermEnd why;
    std::string to;
  };
  std::vector<End> ends() const {
    std::lock_guard lock(mu_);
    return ends_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<End> ends_;
};

// What on_error was told, from any candidate's thread.
class Errors {
 public:
  std::function<void(const std::exception&)> collect() {
    return [this](const std::exception& e) {
      std::lock_guard lock(mu_);
      errors_.emplace_back(e.what());
    };
  }
  std::vector<std::string> all() const {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> errors_;
};

// Candidates of one election, each on its own thread, recording what their work saw.
class Candidates {
 public:
  Candidates(Pool& pool, std::string name, History& history)
      : pool_(pool), name_(std::move(name)), history_(history) {}
  ~Candidates() { stop(); }

  // Campaigns as `candidate`: its work leads until its term's stop token, or until resign_all.
  Election& add(const std::string& candidate, ElectionOptions o) {
    o.candidate = candidate;
    elections_.push_back(std::make_unique<Election>(pool_, name_, std::move(o)));
    Election* e = elections_.back().get();
    threads_.emplace_back([this, e, candidate](std::stop_token stop) {
      e->campaign(
          [&](const Term& term) {
            history_.begin(candidate, term.number());
            while (!term.stop_token().stop_requested() && !resign_all)
              std::this_thread::sleep_for(milliseconds(1));
            history_.end(candidate, term.number());
          },
          stop);
    });
    return *e;
  }
  void stop() {
    for (auto& t : threads_) t.request_stop();
    threads_.clear();
  }
  std::atomic<bool> resign_all{false};

 private:
  Pool& pool_;
  std::string name_;
  History& history_;
  std::vector<std::unique_ptr<Election>> elections_;
  std::vector<std::jthread> threads_;
};

class ElectionHandOffTest : public MigratedPoolTest {
 protected:
  ElectionHandOffTest() : MigratedPoolTest("handoff", 10) {}

  ElectionOptions options(const std::string& value = {}) const {
    ElectionOptions o;
    o.value = value;
    o.tables = tables_;
    o.ttl = milliseconds(30000);  // a takeover that waited for the TTL would show
    o.rejoin_after = milliseconds(50);
    return o;
  }
  // The candidate leading now, as the history says; empty when none.
  static std::string leading(const History& h) {
    const auto events = h.events();
    if (events.empty() || !events.back().begins) return {};
    return events.back().candidate;
  }
  // `candidate`'s registrations for hand-offs of `name` (live or not).
  int registered(const std::string& name, const std::string& candidate) {
    auto c = pool_->acquire();
    const auto r = c->execute(
        "SELECT count(*) AS n FROM " + tables_.qualified(backend().dialect, "lock_waiters") +
            " WHERE lock_key = " + backend().param(1) + " AND owner_thread = " + backend().param(2),
        {Value(name), Value("name:" + candidate)});
    return static_cast<int>(r.int64_at(0, "n"));
  }
};

// The leader hands the name to a named candidate: it leads the next term (a higher number, its
// value published), the third candidate does not, an outsider trying the name all along never
// gets it, the old leader's term is reported handed off to it; then the handed term ends as any
// other: the next candidate takes over long before the 30 s TTL.
TEST_P(ElectionHandOffTest, TheNamedCandidateLeadsTheNextTermAndTheNameIsNeverFreeMeanwhile) {
  History history;
  Candidates candidates(*pool_, "scheduler", history);
  auto ends = std::make_shared<Ends>();
  ElectionOptions first = options("a:1");
  first.observer = ends;
  std::vector<TermEnd> revoked;
  std::mutex revoked_mu;
  first.on_revoked = [&](std::int64_t, TermEnd why) {
    std::lock_guard lock(revoked_mu);
    revoked.push_back(why);
  };
  Election& a = candidates.add("a", first);
  ASSERT_TRUE(eventually([&] { return leading(history) == "a"; }));
  candidates.add("b", options("b:2"));
  candidates.add("c", options("c:3"));
  ASSERT_TRUE(eventually(
      [&] { return registered("scheduler", "b") == 1 && registered("scheduler", "c") == 1; }));

  // An outsider tries the name as fast as it can while it moves.
  UniqueKeyLock outsider_lock(*pool_, {.tables = tables_});
  std::atomic<int> outsider_got{0};
  std::jthread outsider([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      if (auto lease = outsider_lock.try_acquire("scheduler", as("outsider"))) ++outsider_got;
    }
  });
  std::this_thread::sleep_for(milliseconds(50));
  const std::int64_t a_term = history.events().back().term;
  ASSERT_TRUE(a.hand_off("c"));
  ASSERT_TRUE(eventually([&] { return leading(history) == "c"; }))
      << "c did not lead after the hand-off";
  std::this_thread::sleep_for(milliseconds(200));
  outsider.request_stop();
  outsider.join();
  EXPECT_EQ(outsider_got, 0) << "the name was free while it moved from a to c";
  EXPECT_EQ(leading(history), "c");
  auto leader = a.leader();
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->value, "c:3");
  EXPECT_GT(leader->term, a_term);
  {
    std::lock_guard lock(revoked_mu);
    ASSERT_FALSE(revoked.empty());
    EXPECT_EQ(revoked.front(), TermEnd::kHandedOff);
  }
  ASSERT_FALSE(ends->ends().empty());
  EXPECT_EQ(ends->ends().front().why, TermEnd::kHandedOff);
  EXPECT_EQ(ends->ends().front().to, "c");

  // c's term ends as any other: the next candidate leads at once.
  const auto resigned = Clock::now();
  candidates.resign_all = true;
  ASSERT_TRUE(eventually([&] { return history.terms() >= 3; }));
  EXPECT_LT(Clock::now() - resigned, milliseconds(5000))
      << "the handed term's end waited for its TTL";
  candidates.stop();
  expect_one_leader_at_a_time(history);
}

// Term::hand_off with no name, from the work: the name goes to the candidate waiting longest.
TEST_P(ElectionHandOffTest, AnUnnamedHandOffGoesToTheCandidateWaitingLongest) {
  History history;
  Candidates candidates(*pool_, "job", history);
  Election a(*pool_, "job", [&] {
    ElectionOptions o = options();
    o.candidate = "a";
    return o;
  }());
  std::atomic<bool> leads{false}, hand{false};
  std::jthread leader([&](std::stop_token stop) {
    a.campaign(
        [&](const Term& term) {
          history.begin("a", term.number());
          leads = true;
          while (!hand) std::this_thread::sleep_for(milliseconds(1));
          term.hand_off();
          history.end("a", term.number());
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return leads.load(); }));
  candidates.add("early", options());
  ASSERT_TRUE(eventually([&] { return registered("job", "early") == 1; }));
  candidates.add("late", options());
  ASSERT_TRUE(eventually([&] { return registered("job", "late") == 1; }));
  hand = true;
  ASSERT_TRUE(eventually([&] { return history.terms() >= 2; }));
  EXPECT_EQ(history.events().back().candidate, "early");
  leader.request_stop();
  candidates.resign_all = true;
  candidates.stop();
  expect_one_leader_at_a_time(history);
}

// A hand-off to a candidate that does not wait (unknown, or campaigning with hand_offs off):
// on_error is told, the term ends as a resign, and another candidate takes over at once.
TEST_P(ElectionHandOffTest, AHandOffToACandidateThatDoesNotWaitGivesTheNameBackToAll) {
  History history;
  Candidates candidates(*pool_, "api", history);
  Errors errors;
  ElectionOptions first = options();
  first.on_error = errors.collect();
  first.rejoin_after = milliseconds(60000);  // it does not come back in this test
  Election& a = candidates.add("a", first);
  ASSERT_TRUE(eventually([&] { return leading(history) == "a"; }));
  ElectionOptions quiet = options();
  quiet.hand_offs = false;
  candidates.add("quiet", quiet);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(registered("api", "quiet"), 0) << "a candidate with hand_offs off registered";
  const auto asked = Clock::now();
  ASSERT_TRUE(a.hand_off("quiet"));
  ASSERT_TRUE(eventually([&] { return leading(history) == "quiet"; }));
  EXPECT_LT(Clock::now() - asked, milliseconds(5000)) << "the takeover waited for the TTL";
  const std::vector<std::string> told = errors.all();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("'quiet' was waiting"), std::string::npos) << told[0];
  EXPECT_NE(told[0].find("given back to all"), std::string::npos) << told[0];
  EXPECT_FALSE(a.hand_off("nobody")) << "a candidate that does not lead handed off";
  candidates.resign_all = true;
  candidates.stop();
  expect_one_leader_at_a_time(history);
}

// A candidate that died after registering (its place still live, as a process killed a moment
// ago leaves it): the hand-off gives it the name, which then stays taken, by no one that works,
// until that lease's TTL; then another candidate takes it, with a higher term. No two owners.
TEST_P(ElectionHandOffTest, AHandOffToACandidateThatDiedKeepsTheNameTakenUntilItsTtl) {
  History history;
  Candidates candidates(*pool_, "cron", history);
  ElectionOptions first = options();
  first.rejoin_after = milliseconds(60000);  // it does not come back in this test
  Election& a = candidates.add("a", first);
  ASSERT_TRUE(eventually([&] { return leading(history) == "a"; }));
  {
    // The dead candidate's place: as its campaign left it, with a 1.5 s lease.
    auto c = pool_->acquire();
    const auto& b = backend();
    const std::string now =
        b.dialect == Dialect::kPostgreSQL ? "statement_timestamp()" : "UTC_TIMESTAMP(6)";
    const std::string minute =
        b.dialect == Dialect::kPostgreSQL ? "interval '1 minute'" : "INTERVAL 1 MINUTE";
    c->execute(
        "INSERT INTO " + tables_.qualified(b.dialect, "lock_waiters") +
            " (waiter_id, lock_key, owner_host, owner_process, owner_thread,"
            " registered_at, expires_at, ttl_ms, lock_delay_ms, metadata) VALUES (" +
            b.param(1) + ", " + b.param(2) + ", " + b.param(3) + ", " + b.param(4) + ", " +
            b.param(5) + ", " + now + ", " + now + " + " + minute + ", 1500, 0, NULL)",
        {Value("c-dead"), Value("cron"), Value("gone-host"), Value("4242"), Value("name:dead")});
  }
  candidates.add("alive", options());
  ASSERT_TRUE(eventually([&] { return registered("cron", "alive") == 1; }));
  const std::int64_t a_term = history.events().back().term;
  ASSERT_TRUE(a.hand_off("dead"));
  ASSERT_TRUE(eventually([&] {
    auto l = a.leader();
    return l && l->owner.thread == "name:dead";
  }));
  const auto handed = Clock::now();
  ASSERT_TRUE(eventually([&] { return leading(history) == "alive"; }));
  EXPECT_GE(Clock::now() - handed, milliseconds(1000))
      << "another candidate took the name the dead one held before its TTL";
  EXPECT_GT(history.events().back().term, a_term);
  candidates.resign_all = true;
  candidates.stop();
  expect_one_leader_at_a_time(history);
}

// Before migration 0010 (lock_waiters without its lease columns): a candidate campaigns and
// leads as before, tells on_error once that it campaigns without registering, and a hand-off
// finds no candidate and gives the name back to all.
TEST_P(ElectionHandOffTest, BeforeMigration0010CandidatesCampaignWithoutHandOffs) {
  {
    auto c = pool_->acquire();
    c->execute("ALTER TABLE " + tables_.qualified(backend().dialect, "lock_waiters") +
               " DROP COLUMN ttl_ms");
  }
  History history;
  Candidates candidates(*pool_, "old", history);
  Errors errors;
  ElectionOptions o = options();
  o.on_error = errors.collect();
  // a campaigns again only long after its term: the name given back to all then goes to b,
  // whatever the pace of b's wake-up (a rejoining after 50 ms could win it back first).
  ElectionOptions first = o;
  first.rejoin_after = std::chrono::seconds(30);
  Election& a = candidates.add("a", first);
  ASSERT_TRUE(eventually([&] { return leading(history) == "a"; }));
  candidates.add("b", o);
  std::this_thread::sleep_for(milliseconds(2500));  // b tries (and refreshes) twice meanwhile
  ASSERT_TRUE(a.hand_off("b"));
  ASSERT_TRUE(eventually([&] { return leading(history) == "b"; }));
  candidates.resign_all = true;
  candidates.stop();
  expect_one_leader_at_a_time(history);
  int migrate = 0, handed = 0;
  for (const auto& e : errors.all()) {
    if (e.find("migration 0010") != std::string::npos) ++migrate;
    if (e.find("not handed off") != std::string::npos) ++handed;
  }
  EXPECT_EQ(migrate, 2) << "each candidate tells once that it campaigns without registering";
  EXPECT_EQ(handed, 1);
}

INSTANTIATE_TEST_SUITE_P(Pairs, ElectionHandOffTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
