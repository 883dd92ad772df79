// SPDX-License-Identifier: Apache-2.0
// Election against every database x driver pair, from the guarantee's side: of several
// candidates, at most one believes it leads at any moment and terms strictly increase; a term
// taken away (an operator's release) stops the leader's work before another term begins, and the
// candidate campaigns again; a resign hands over long before the TTL; leader() and observe() tell
// who leads and what it publishes; database errors and a throwing leader never end a campaign;
// bad options are refused before anything is sent.
#include "dblock/election.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "migrated_fixture.hpp"
#include "process.hpp"
#include "term_history.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class ElectionTest : public MigratedPoolTest {
 protected:
  ElectionTest() : MigratedPoolTest("elect", 8) {}

  ElectionOptions options(const std::string& candidate, const std::string& value = {}) const {
    ElectionOptions o;
    o.candidate = candidate;
    o.value = value;
    o.tables = tables_;
    o.ttl = milliseconds(3000);
    o.rejoin_after = milliseconds(50);
    return o;
  }
};

// Four candidates, each leading for a while and then returning (which resigns): the history shows
// one leader at a time, increasing terms, and terms of several candidates.
TEST_P(ElectionTest, OneCandidateLeadsAtATimeAndTermsIncrease) {
  History history;
  std::map<std::string, int> led;
  std::mutex led_mu;
  std::vector<std::unique_ptr<Election>> elections;
  std::vector<std::jthread> candidates;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "c" + std::to_string(i);
    elections.push_back(std::make_unique<Election>(*pool_, "scheduler", options(name)));
    candidates.emplace_back([&, name, election = elections.back().get()](std::stop_token stop) {
      election->campaign(
          [&](const Term& term) {
            history.begin(name, term.number());
            std::this_thread::sleep_for(milliseconds(60));
            history.end(name, term.number());
            std::lock_guard lock(led_mu);
            ++led[name];
          },
          stop);
    });
  }
  ASSERT_TRUE(eventually([&] { return history.terms() >= 12; }));
  for (auto& c : candidates) c.request_stop();
  candidates.clear();  // joins: every campaign returned once stopped
  expect_one_leader_at_a_time(history);
  EXPECT_GE(led.size(), 2u) << "one candidate kept the lead through every resign";
  EXPECT_FALSE(elections.front()->leader()) << "a stopped campaign left a leader behind";
}

// A term taken away: the leader's stop token comes, its work ends (reported as lost), and the
// candidate campaigns again and is elected for a new, higher term.
TEST_P(ElectionTest, ALeaderWhoseTermIsTakenAwayStopsAndCampaignsAgain) {
  Election election(*pool_, "scheduler", [&] {
    ElectionOptions o = options("only");
    o.ttl = milliseconds(900);  // renewed every 300 ms: the loss is found that soon
    return o;
  }());
  std::atomic<std::int64_t> first{0}, second{0};
  std::jthread candidate([&](std::stop_token stop) {
    election.campaign(
        [&](const Term& term) {
          if (first == 0) {
            first = term.number();
            while (!term.stop_token().stop_requested())
              std::this_thread::sleep_for(milliseconds(5));
          } else {
            second = term.number();
            while (!term.stop_token().stop_requested())
              std::this_thread::sleep_for(milliseconds(5));
          }
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return first != 0; }));
  ASSERT_TRUE(election.leader());
  release_by_operator("scheduler");
  ASSERT_TRUE(eventually([&] { return second != 0; })) << "the candidate did not campaign again";
  EXPECT_GT(second.load(), first.load());
  candidate.request_stop();
}

// A leader that resigns (its work returns) hands over to a waiting candidate long before the TTL:
// the waiting candidate is woken (PostgreSQL) or polls (MySQL, MariaDB).
TEST_P(ElectionTest, AfterAResignAWaitingCandidateTakesOverLongBeforeTheTtl) {
  ElectionOptions first_options = options("first");
  first_options.ttl = milliseconds(30000);
  first_options.rejoin_after = milliseconds(60000);  // the first does not come back in this test
  Election first(*pool_, "scheduler", first_options);
  Election second(*pool_, "scheduler", options("second"));
  std::atomic<bool> first_leads{false}, release_first{false};
  std::atomic<Clock::rep> first_ended{0}, second_began{0};
  std::jthread a([&](std::stop_token stop) {
    first.campaign(
        [&](const Term&) {
          first_leads = true;
          while (!release_first) std::this_thread::sleep_for(milliseconds(1));
          first_ended = Clock::now().time_since_epoch().count();
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return first_leads.load(); }));
  std::jthread b([&](std::stop_token stop) {
    second.campaign(
        [&](const Term& term) {
          second_began = Clock::now().time_since_epoch().count();
          while (!term.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        },
        stop);
  });
  std::this_thread::sleep_for(milliseconds(300));  // the second waits for the name
  release_first = true;
  ASSERT_TRUE(eventually([&] { return second_began != 0; }));
  const auto gap = Clock::duration(second_began - first_ended);
  EXPECT_LT(gap, milliseconds(2000)) << "the takeover waited for something like the TTL";
  auto leader = second.leader();
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->owner, second.candidate());
}

// leader() names the leader, its value and term; nothing when no one leads. observe() reports
// each change, beginning with the state it finds.
TEST_P(ElectionTest, LeaderAndObserveTellWhoLeadsAndWhatItPublishes) {
  Election candidate(*pool_, "api", options("c1", "10.0.0.7:8080 ☃"));
  Election watcher(*pool_, "api", options("watcher"));
  EXPECT_FALSE(watcher.leader());

  std::mutex mu;
  std::vector<std::optional<Leader>> seen;
  std::jthread observer([&](std::stop_token stop) {
    watcher.observe(
        [&](const std::optional<Leader>& l) {
          std::lock_guard lock(mu);
          seen.push_back(l);
        },
        stop, milliseconds(20));
  });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return !seen.empty();
  })) << "observe() reported nothing at first";
  std::atomic<std::int64_t> term{0};
  std::atomic<bool> resign{false};
  std::jthread leading([&](std::stop_token stop) {
    candidate.campaign(
        [&](const Term& t) {
          term = t.number();
          while (!resign) std::this_thread::sleep_for(milliseconds(2));
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return term != 0; }));
  auto leader = watcher.leader();
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->value, "10.0.0.7:8080 ☃");
  EXPECT_EQ(leader->term, term.load());
  EXPECT_EQ(leader->owner, candidate.candidate());
  EXPECT_FALSE(leader->elected_at.empty());
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return seen.size() >= 2;
  })) << "observe() did not report the leader";

  leading.request_stop();
  resign = true;
  leading.join();
  EXPECT_FALSE(watcher.leader());
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return seen.size() >= 3;
  }));
  observer.request_stop();
  observer.join();
  ASSERT_GE(seen.size(), 3u);
  EXPECT_FALSE(seen[0]) << "no leader at first";
  ASSERT_TRUE(seen[1]);
  EXPECT_EQ(seen[1]->term, term.load());
  EXPECT_FALSE(seen[2]) << "no leader once it stopped";
}

// A leader's work that throws ends its term (reported to on_error and on_revoked), and the
// candidate campaigns again: it is elected for a new term.
TEST_P(ElectionTest, ALeaderThatThrowsEndsItsTermAndCampaignsAgain) {
  std::atomic<int> errors{0};
  std::vector<std::pair<std::int64_t, TermEnd>> ends;
  std::mutex mu;
  ElectionOptions o = options("thrower");
  o.on_error = [&](const std::exception&) { ++errors; };
  o.on_revoked = [&](std::int64_t t, TermEnd why) {
    std::lock_guard lock(mu);
    ends.emplace_back(t, why);
  };
  Election election(*pool_, "job", o);
  std::atomic<int> terms{0};
  std::jthread candidate([&](std::stop_token stop) {
    election.campaign(
        [&](const Term&) {
          if (++terms < 3) throw std::runtime_error("the work failed");
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return terms >= 3; }));
  candidate.request_stop();
  candidate.join();
  EXPECT_EQ(errors, 2);
  std::lock_guard lock(mu);
  ASSERT_GE(ends.size(), 3u);
  EXPECT_EQ(ends[0].second, TermEnd::kThrew);
  EXPECT_EQ(ends[1].second, TermEnd::kThrew);
  EXPECT_LT(ends[0].first, ends[1].first);
}

// A candidate whose database cannot be reached keeps campaigning, reporting each failure, and
// returns promptly once stopped.
TEST_P(ElectionTest, ACandidateWithoutItsDatabaseKeepsCampaigningUntilStopped) {
  const std::string scheme = backend().dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql";
  auto unreachable =
      open_pool(DatabaseUrl::parse(scheme + "://u@127.0.0.1:1/db?driver=" + backend().driver),
                {.max_size = 1});
  std::atomic<int> errors{0};
  ElectionOptions o = options("cut-off");
  o.retry = BackoffPolicy{milliseconds(20), milliseconds(50), milliseconds(1)};
  o.on_error = [&](const std::exception&) { ++errors; };
  Election election(*unreachable, "job", o);
  std::atomic<bool> returned{false};
  std::jthread candidate([&](std::stop_token stop) {
    election.campaign([](const Term&) { ADD_FAILURE() << "elected without a database"; }, stop);
    returned = true;
  });
  ASSERT_TRUE(eventually([&] { return errors >= 3; }));
  EXPECT_FALSE(returned) << "the campaign gave up on its own";
  const auto stopped = Clock::now();
  candidate.request_stop();
  candidate.join();
  EXPECT_LT(Clock::now() - stopped, milliseconds(5000));
}

TEST_P(ElectionTest, BadOptionsAndTwoCampaignsUnderOneNameAreRefused) {
  ElectionOptions too_short = options("a");
  too_short.ttl = milliseconds(50);
  expect_error([&] { Election(*pool_, "job", too_short); }, ErrorCode::kInvalidArgument, "100 ms",
               "a 50 ms election TTL was taken");
  ElectionOptions too_big = options("a", std::string(5000, 'x'));
  expect_error([&] { Election(*pool_, "job", too_big); }, ErrorCode::kInvalidArgument, "4096",
               "a 5000-byte value was taken");
  expect_error([&] { Election(*pool_, "", options("a")); }, ErrorCode::kInvalidArgument, "empty",
               "an empty name was taken");

  Election one(*pool_, "job", options("same"));
  Election two(*pool_, "job", options("same"));
  std::atomic<bool> leading{false};
  std::jthread first([&](std::stop_token stop) {
    one.campaign(
        [&](const Term& t) {
          leading = true;
          while (!t.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(2));
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return leading.load(); }));
  std::stop_source never;
  expect_error([&] { two.campaign([](const Term&) {}, never.get_token()); },
               ErrorCode::kInvalidArgument, "same candidate name",
               "a second campaign under one candidate name was taken");
}

// `dblock leader` shows no leader, then the one campaigning: its term, value and candidate.
TEST_P(ElectionTest, TheLeaderCommandShowsWhoLeads) {
  ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
  std::string url = std::getenv(backend().url_env.c_str());
  url +=
      (url.find('?') == std::string::npos ? "?" : "&") + std::string("driver=") + backend().driver;
  const auto leader_command = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{DBLOCK_CLI_PATH, "leader",   "--key",
                                  "api",           "--prefix", tables_.prefix()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {{"DBLOCK_URL", url}});
  };
  auto none = leader_command({});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "api: no leader\n");
  EXPECT_EQ(leader_command({"--json"}).out, "null\n");

  Election candidate(*pool_, "api", options("c1", "10.0.0.7:8080"));
  std::atomic<std::int64_t> term{0};
  std::jthread leading([&](std::stop_token stop) {
    candidate.campaign(
        [&](const Term& t) {
          term = t.number();
          while (!t.stop_token().stop_requested()) std::this_thread::sleep_for(milliseconds(5));
        },
        stop);
  });
  ASSERT_TRUE(eventually([&] { return term != 0; }));
  auto shown = leader_command({});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("api: led by " + candidate.candidate().to_string() + ", term " +
                           std::to_string(term.load())),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("value 10.0.0.7:8080"), std::string::npos) << shown.out;
  auto json = leader_command({"--json"});
  EXPECT_NE(json.out.find("\"term\":" + std::to_string(term.load())), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"value\":\"10.0.0.7:8080\""), std::string::npos) << json.out;
}

INSTANTIATE_TEST_SUITE_P(Pairs, ElectionTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
