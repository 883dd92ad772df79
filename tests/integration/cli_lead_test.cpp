// SPDX-License-Identifier: Apache-2.0
// `dblock lead` as "one replica leads at a time": several candidates, each a `dblock lead`
// process whose command writes heartbeats with its term (DBLOCK_FENCING_TOKEN). Leaders are
// killed (SIGKILL), paused past their TTL (SIGSTOP, with their command), have their lease taken
// away (`dblock release --force`), or see their command exit; after each, the heartbeats show no
// two terms working at once and terms strictly increasing, and the other candidates, and the
// one that lost, keep campaigning.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_heartbeats.hpp"

namespace dblock::testing {
namespace {

class CliLeadTest : public CliHeartbeatTest {
 protected:
  std::vector<std::string> lead_sh(const std::string& script,
                                   const std::vector<std::string>& options = {}) const {
    return command_sh("lead", script, options);
  }

  // `dblock leader --json`: null when no one leads.
  nlohmann::json leader() const {
    const ProcessResult r = run(cli("leader", {"--key", key_, "--json"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  // The pid of the `dblock lead` process that leads now (owner_process is "<pid>-<random>").
  static pid_t pid_of(const nlohmann::json& leader) {
    const std::string process = leader.at("owner_process").get<std::string>();
    return static_cast<pid_t>(std::stol(process.substr(0, process.find('-'))));
  }

  // Waits up to `timeout` until a heartbeat of a term other than those in `seen` is logged;
  // returns its token, or 0.
  std::int64_t wait_for_new_term(const std::set<std::int64_t>& seen,
                                 std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      for (const Span& s : spans()) {
        if (!seen.count(s.token)) return s.token;
      }
      if (std::chrono::steady_clock::now() >= deadline) return 0;
      std::this_thread::sleep_for(10ms);
    }
  }

  // The children of `pid` that lead a process group of their own: the command dblock started
  // (its other child, the guard, stays in dblock's group).
  static std::vector<pid_t> commands_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
    std::vector<pid_t> out;
    for (pid_t child; in >> child;) {
      if (::getpgid(child) == child) out.push_back(child);
    }
    return out;
  }
};

TEST_P(CliLeadTest, AKilledLeaderIsReplacedWithinItsTtlAndNoTwoTermsOverlap) {
  std::vector<std::unique_ptr<ChildProcess>> candidates;
  for (int i = 0; i < 3; ++i) candidates.push_back(start(lead_sh(beat(0), {"--ttl", "1s"})));
  std::set<std::int64_t> terms;
  std::int64_t term = wait_for_new_term(terms, 20s);
  ASSERT_NE(term, 0) << "no candidate was elected";
  for (int kill = 0; kill < 2; ++kill) {
    terms.insert(term);
    const nlohmann::json now = leader();
    ASSERT_TRUE(now.is_object()) << "no leader while a term's command beats";
    EXPECT_EQ(now.at("term").get<std::int64_t>(), term);
    ASSERT_EQ(::kill(pid_of(now), SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    term = wait_for_new_term(terms, 10s);
    ASSERT_NE(term, 0) << "no candidate took over after the leader was killed";
    // The TTL bounds the takeover, plus a renewal and a start of sh.
    EXPECT_LT(std::chrono::steady_clock::now() - killed, 3s);
  }
  // Each command is a shell running beat.sh in a child: when its dblock is killed, the guard
  // stops the whole group, not only the shell dblock started.
  int killed = 0;
  for (auto& c : candidates) {
    c->signal(SIGTERM);
    killed += c->wait().exit_code == 128 + SIGKILL;
  }
  EXPECT_EQ(killed, 2);
  const auto runs = spans();
  EXPECT_EQ(runs.size(), 3u) << read_text_file(file("log"));
  expect_one_after_another(runs);
}

TEST_P(CliLeadTest, ACandidateStopsItsCommandWhenItsLeaseIsTakenAndCampaignsAgain) {
  auto candidate = start(lead_sh(beat(0, true), {"--ttl", "2s", "--rejoin-after", "0"}));
  const std::int64_t first = wait_for_new_term({}, 20s);
  ASSERT_NE(first, 0);
  auto released = run(cli("release", {"--key", key_, "--force"}));
  ASSERT_EQ(released.exit_code, 0) << released.err;
  // The command ignores SIGTERM: it is killed, and the candidate leads again, a new term.
  const std::int64_t second = wait_for_new_term({first}, 10s);
  ASSERT_NE(second, 0) << "the candidate did not campaign again";
  EXPECT_GT(second, first);
  candidate->signal(SIGTERM);
  const ProcessResult r = candidate->wait();
  // Its shell dies of SIGTERM; beat.sh, which ignores it, is killed.
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("left processes running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lost the leadership of " + key_ + " (term " + std::to_string(first) +
                       ") while sh was running (its lease is gone)"),
            std::string::npos)
      << r.err;
  expect_no_overlap(2);
}

TEST_P(CliLeadTest, ALeaderPausedPastItsTtlStopsItsCommandWhenResumedAndItsWritesAreFenced) {
  // fenced.sh LOG: a store that takes a heartbeat only from a term at least as new as any it
  // took before (what DBLOCK_FENCING_TOKEN is for); the ones it refuses go to LOG.refused.
  std::ofstream(file("fenced.sh"))
      << "while true; do\n"
         "  flock \"$1.lock\" sh -c 'max=$(cat \"$1.max\" 2>/dev/null || echo 0)\n"
         "    if [ \"$DBLOCK_FENCING_TOKEN\" -ge \"$max\" ]; then\n"
         "      echo \"$DBLOCK_FENCING_TOKEN\" > \"$1.max\"\n"
         "      echo \"$(date +%s%N) $DBLOCK_FENCING_TOKEN\" >> \"$1\"\n"
         "    else echo \"$(date +%s%N) $DBLOCK_FENCING_TOKEN\" >> \"$1.refused\"; fi' sh \"$1\"\n"
         "  sleep 0.05\n"
         "done\n";
  const std::string fenced = "sh '" + file("fenced.sh") + "' '" + file("log") + "'";
  auto first = start(lead_sh(fenced, {"--ttl", "1s"}));
  const std::int64_t term = wait_for_new_term({}, 20s);
  ASSERT_NE(term, 0);
  auto second = start(lead_sh(fenced, {"--ttl", "1s"}));
  // The whole leading host pauses: dblock and its command's process group.
  const std::vector<pid_t> command = commands_of(first->pid());
  if (command.size() != 1u) {
    first->signal(SIGKILL);
    second->signal(SIGKILL);
    FAIL() << "dblock lead should have one command, has " << command.size();
  }
  struct Paused {  // resumed however the test ends, so that it ends
    pid_t dblock, group;
    ~Paused() {
      ::kill(dblock, SIGCONT);
      ::kill(-group, SIGCONT);
    }
  } paused{first->pid(), command[0]};
  ASSERT_EQ(::kill(-command[0], SIGSTOP), 0);
  ASSERT_EQ(::kill(first->pid(), SIGSTOP), 0);
  // Past the 1 s TTL: the other candidate is elected meanwhile. (Its command may write only once
  // the paused one is resumed: the pause may have caught the paused command holding the store's
  // lock.)
  std::this_thread::sleep_for(2500ms);
  ASSERT_EQ(::kill(first->pid(), SIGCONT), 0);
  ASSERT_EQ(::kill(-command[0], SIGCONT), 0);
  const std::int64_t next = wait_for_new_term({term}, 10s);
  if (next == 0) {
    second->signal(SIGTERM);
    FAIL() << "no one took over from the paused leader: " << second->wait().err;
  }
  // Resumed, it finds its term over and stops its command: no heartbeat of the old term is
  // taken after the new one began, and the paused candidate campaigns on.
  std::this_thread::sleep_for(1500ms);
  EXPECT_NE(::kill(-command[0], 0), 0) << "the paused leader's command still runs";
  ASSERT_EQ(::kill(first->pid(), 0), 0) << "the paused candidate ended instead of campaigning";
  first->signal(SIGTERM);
  second->signal(SIGTERM);
  const ProcessResult r = first->wait();
  second->wait();
  EXPECT_NE(r.err.find("lost the leadership of " + key_ + " (term " + std::to_string(term) + ")"),
            std::string::npos)
      << r.err;
  const auto runs = spans();
  ASSERT_GE(runs.size(), 2u);
  expect_one_after_another(runs);
}

TEST_P(CliLeadTest, ACommandThatExitsEndsItsTermAndAnotherCandidateTakesOver) {
  // Each term's command beats 3 times and exits; the candidate whose term ended waits 1 s
  // (--rejoin-after) before campaigning again, so the other one leads next.
  auto a = start(lead_sh(beat(3) + "; exit 3"));
  auto b = start(lead_sh(beat(3) + "; exit 3"));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (spans().size() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  a->signal(SIGTERM);
  b->signal(SIGTERM);
  const ProcessResult ra = a->wait();
  const ProcessResult rb = b->wait();
  EXPECT_NE(ra.err.find("sh exited with status 3; giving up the leadership of " + key_),
            std::string::npos)
      << ra.err;
  EXPECT_NE(rb.err.find("sh exited with status 3; giving up the leadership of " + key_),
            std::string::npos)
      << rb.err;
  const auto runs = spans();
  EXPECT_GE(runs.size(), 4u) << read_text_file(file("log"));
  expect_one_after_another(runs);
}

TEST_P(CliLeadTest, ASignalStopsTheCommandAndHandsOverAtOnce) {
  // The leader's command learns its term and publishes nothing else; the value is dblock's.
  auto a = start(
      lead_sh("echo \"$DBLOCK_FENCING_TOKEN $DBLOCK_KEY\" > '" + file("env") + "'; " + beat(0),
              {"--value", "10.0.0.7:8080", "--candidate", "first"}));
  const std::int64_t term = wait_for_new_term({}, 20s);
  ASSERT_NE(term, 0);
  auto b = start(lead_sh(beat(0), {"--ttl", "30s"}));
  const nlohmann::json now = leader();
  ASSERT_TRUE(now.is_object());
  EXPECT_EQ(now.at("term").get<std::int64_t>(), term);
  EXPECT_EQ(now.at("value"), "10.0.0.7:8080");
  EXPECT_EQ(now.at("owner_thread"), "name:first");
  EXPECT_EQ(read_text_file(file("env")), std::to_string(term) + " " + key_ + "\n");
  // SIGINT: passed on to the command (sh dies of it), the leadership given back, and the other
  // candidate, woken, leads long before any TTL.
  std::this_thread::sleep_for(500ms);  // b is campaigning by now
  a->signal(SIGINT);
  const ProcessResult r = a->wait();
  const auto ended = std::chrono::steady_clock::now();
  EXPECT_EQ(r.exit_code, 128 + SIGINT) << r.err;
  const std::int64_t next = wait_for_new_term({term}, 10s);
  ASSERT_NE(next, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - ended, 2s) << "b's TTL is 30 s";
  // A candidate that does not lead ends at once on a signal.
  auto c = start(lead_sh(beat(0)));
  std::this_thread::sleep_for(500ms);
  c->signal(SIGTERM);
  const ProcessResult rc = c->wait();
  EXPECT_EQ(rc.exit_code, 128 + SIGTERM) << rc.err;
  EXPECT_NE(rc.err.find("stopped by SIGTERM while campaigning for " + key_), std::string::npos)
      << rc.err;
  b->signal(SIGTERM);
  EXPECT_EQ(b->wait().exit_code, 128 + SIGTERM);
  EXPECT_TRUE(leader().is_null()) << "a stopped leader left its leadership behind";
  expect_no_overlap(2);
}

// A deploy: the old leader, stopped by SIGTERM with --hand-off-to, hands the leadership to the
// named candidate (not to the other one waiting), whose command starts long before any TTL;
// the two terms' heartbeats do not overlap and the term increases. A name no one campaigns
// under gives it back to all, and says so.
TEST_P(CliLeadTest, AHandOffOnStopGoesToTheNamedCandidate) {
  auto a = start(lead_sh(beat(0), {"--candidate", "old", "--hand-off-to", "new", "--ttl", "30s"}));
  const std::int64_t term = wait_for_new_term({}, 20s);
  ASSERT_NE(term, 0);
  auto other = start(lead_sh(beat(0), {"--candidate", "other", "--ttl", "30s"}));
  auto b =
      start(lead_sh(beat(0), {"--candidate", "new", "--ttl", "30s", "--hand-off-to", "nobody"}));
  std::this_thread::sleep_for(1500ms);  // both campaign, and have registered, by now
  a->signal(SIGTERM);
  const ProcessResult r = a->wait();
  const auto ended = std::chrono::steady_clock::now();
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("handed the leadership of " + key_ + " off"), std::string::npos) << r.err;
  const std::int64_t next = wait_for_new_term({term}, 10s);
  ASSERT_NE(next, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - ended, 2s) << "the TTLs are 30 s";
  const nlohmann::json now = leader();
  ASSERT_TRUE(now.is_object());
  EXPECT_EQ(now.at("owner_thread"), "name:new");
  EXPECT_EQ(now.at("term").get<std::int64_t>(), next);
  // No candidate "nobody": b gives the leadership back to all; "other" takes it.
  b->signal(SIGTERM);
  const ProcessResult rb = b->wait();
  EXPECT_EQ(rb.exit_code, 128 + SIGTERM) << rb.err;
  EXPECT_NE(rb.err.find("'nobody'"), std::string::npos) << rb.err;
  const std::int64_t third = wait_for_new_term({term, next}, 10s);
  ASSERT_NE(third, 0) << "the leadership was not given back to all";
  other->signal(SIGTERM);
  EXPECT_EQ(other->wait().exit_code, 128 + SIGTERM);
  expect_no_overlap(3);
}

TEST_P(CliLeadTest, BadOptionsAMissingCommandAndMissingTablesEndItWithTheirExitCodes) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--ttl", "50ms"}, "--ttl"},
      {{"--ttl", "1s", "--stop-margin", "1s"}, "--stop-margin"},
      {{"--kill-after", "5s"}, "--kill-after"},
      {{"--rejoin-after", "2h"}, "--rejoin-after"},
      {{"--hand-off", "--hand-off-to", "x"}, "--hand-off"},
      {{"--value", std::string(4097, 'v')}, "value"}};
  for (const auto& [options, named] : bad) {
    const ProcessResult r = run(lead_sh("touch '" + file("ran") + "'", options));
    EXPECT_EQ(r.exit_code, 64) << named << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
  const ProcessResult missing = run({DBLOCK_CLI_PATH, "lead", "--prefix", unique_name("none") + "_",
                                     "--key", key_, "--", "touch", file("ran")});
  expect_one_line_error(missing, 78, "run `dblock migrate up`", "");
  EXPECT_FALSE(std::filesystem::exists(file("ran")));
  const ProcessResult not_found =
      run(cli("lead", {"--key", key_, "--", "/nonexistent/dblock-lead-command"}));
  EXPECT_EQ(not_found.exit_code, 127) << not_found.err;
  EXPECT_NE(not_found.err.find("cannot run /nonexistent/dblock-lead-command"), std::string::npos)
      << not_found.err;
  EXPECT_TRUE(leader().is_null()) << "a command that cannot run must not keep the leadership";
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliLeadTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
