// SPDX-License-Identifier: Apache-2.0
// Leader election under faults, from the guarantee's side: three candidates, each a fault_worker
// process (`elect` mode) campaigning with dblock::Election, whose work records when it began,
// each moment it still led, and when its stop token ended it, and makes fenced writes with its
// term. The leader is killed with SIGKILL (and a new candidate started in its place), has every
// session of its own killed on the server, is cut off from the database (but not from the
// resource it writes to), or works while the server crashes and restarts.
//
// After each fault: the history checker finds no two terms whose work overlapped and terms
// strictly increasing (so the stop token fired before another term began); the election goes on
// (a new term after a killed or cut-off leader or a crash; a term working one TTL after a
// session kill); at the end every surviving candidate was still campaigning and none of their
// fenced writes was refused, which a write of an older term after a newer one's would be.
//
// The faults run on the pairs of the fault suite (PostgreSQL with libpq and libpqxx, MariaDB or
// MySQL with libmysqlclient); an election's lease is the unique-key lock's.
#include <signal.h>

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include "dblock/election.hpp"
#include "fault_fixture.hpp"
#include "fault_proxy.hpp"
#include "private_server.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kTtlMs = 1000;
constexpr const char* kName = "elected";

long field(const std::string& out, const std::string& name) {
  auto pos = out.find(name + "=");
  return pos == std::string::npos ? -1 : std::stol(out.substr(pos + name.size() + 1));
}

class ElectionFaultTest : public FaultTest {
 protected:
  void SetUp() override {
    FaultTest::SetUp();
    // The ids of MySQL sessions each candidate opened (fault_worker's elect mode).
    if (backend().dialect != Dialect::kPostgreSQL) {
      conn_->execute("CREATE TABLE " + tables_.qualified(backend().dialect, "sessions") +
                     " (client VARCHAR(64) NOT NULL, session BIGINT NOT NULL)");
    }
  }

  void TearDown() override {
    // A test that failed half-way: its candidates would campaign for their full minute.
    for (auto& [client, process] : candidates_) {
      process->signal(SIGKILL);
      auto r = process->wait();
      if (HasFailure()) {
        std::printf("[ election ] %s: %s said: %s\n", backend().name.c_str(), client.c_str(),
                    r.err.c_str());
      }
    }
    candidates_.clear();
    FaultTest::TearDown();
  }

  // Starts the candidate `client` (c0, c1, ...), campaigning for at most a minute. One
  // `behind_proxy` reaches the election's database through a fault proxy of its own (proxies_),
  // and the resource it writes to directly.
  void start_candidate(bool behind_proxy = false) {
    const std::string client = "c" + std::to_string(candidates_.size() + dead_.size());
    std::string url = worker_url();
    if (behind_proxy) {
      const DatabaseUrl server = backend().url();
      auto& proxy = proxies_[client] =
          std::make_unique<FaultProxy>(server.host, server.effective_port());
      const std::string direct = server.host + ":" + std::to_string(server.effective_port());
      url.replace(url.find(direct), direct.size(), "127.0.0.1:" + std::to_string(proxy->port()));
    }
    candidates_[client] = std::make_unique<ChildProcess>(
        std::vector<std::string>{DBLOCK_FAULT_WORKER_PATH, "elect", url, tables_.prefix(), kName,
                                 std::to_string(kTtlMs), new_history(client), client, "60",
                                 worker_url()},
        std::map<std::string, std::string>{});
  }

  // The leader as the database sees it, and its candidate's name; nothing when no one leads
  // (or the server cannot be reached).
  std::optional<std::pair<Leader, std::string>> leader() {
    try {
      if (!conn_) conn_ = backend().connect();
      auto now = leader_of(*conn_, kName, tables_);
      if (!now) return std::nullopt;
      const std::string thread = now->owner.thread;
      return std::make_pair(*now, thread.substr(thread.find(':') + 1));  // "name:<client>"
    } catch (const Error&) {
      conn_.reset();  // the server went away: reconnect next time
      return std::nullopt;
    }
  }

  // The holds of every history so far; none when a line is being written (read again later).
  std::vector<Hold> holds_so_far() {
    try {
      return load_holds(histories_, false);
    } catch (const std::runtime_error&) {
      return {};
    }
  }

  // Waits until a term above `above` whose work began after `after_us` (monotonic) has worked
  // (recorded a moment it led) and returns it.
  std::optional<Hold> wait_for_term_after(std::int64_t after_us, milliseconds timeout,
                                          std::int64_t above = 0) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const Hold& h : holds_so_far()) {
        if (h.from_us > after_us && h.token > above && h.until_us > h.from_us) return h;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return std::nullopt;
  }

  // Waits until a term still going records a moment it led after `after_us`; returns it.
  std::optional<Hold> wait_for_work_after(std::int64_t after_us, milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const Hold& h : holds_so_far()) {
        if (h.until_us > after_us && h.release_outcome.empty()) return h;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return std::nullopt;
  }

  // Kills the leader's process with SIGKILL and, if `replace`, starts a candidate in its place;
  // returns the moment it was killed, or 0 when no one led.
  std::int64_t kill_leader(bool replace = true) {
    auto now = leader();
    if (!now || !candidates_.count(now->second)) return 0;
    auto& process = candidates_.at(now->second);
    process->signal(SIGKILL);
    const auto killed_at = monotonic_us();
    EXPECT_EQ(process->wait().exit_code, 128 + SIGKILL);
    dead_.push_back(now->second);
    candidates_.erase(now->second);
    std::printf("[ election ] %s: killed %s, the leader of term %lld\n", backend().name.c_str(),
                now->second.c_str(), static_cast<long long>(now->first.term));
    if (replace) start_candidate();
    return killed_at;
  }

  // Kills every session candidate `client` has open on the server, from conn_, and waits until
  // the server has ended them. Returns how many it killed.
  int kill_sessions_of(const std::string& client) {
    // One query per killed session, counting 1 while it lives, and its parameters.
    std::vector<std::pair<std::string, std::vector<Value>>> alive;
    if (backend().dialect == Dialect::kPostgreSQL) {
      const std::string tag = tables_.prefix() + client;  // the candidate's application_name
      auto r = conn_->execute(
          "SELECT pid, backend_start::text AS started FROM pg_stat_activity"
          " WHERE application_name = $1",
          {Value(tag)});
      for (std::size_t i = 0; i < r.size(); ++i) {
        const Value pid(r.int64_at(i, "pid")), started(*r.at(i, "started"));
        // CASE: never signal a session that is not the candidate's (a pid may be reused).
        conn_->execute(
            "SELECT CASE WHEN application_name = $2 AND backend_start = $3::timestamptz"
            " THEN pg_terminate_backend(pid) END AS killed FROM pg_stat_activity WHERE pid = $1",
            {pid, Value(tag), started});
        alive.push_back(
            {"SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = $1"
             " AND backend_start = $2::timestamptz",
             {pid, started}});
      }
    } else {
      auto r =
          conn_->execute("SELECT session FROM " + tables_.qualified(backend().dialect, "sessions") +
                             " WHERE client = ? AND session IN"
                             " (SELECT id FROM information_schema.processlist)",
                         {Value(client)});
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::int64_t id = r.int64_at(i, "session");  // MySQL never reuses an id
        try {
          backend().kill_session(*conn_, id);
        } catch (const Error&) {
          continue;  // gone meanwhile ("unknown thread id")
        }
        alive.push_back(
            {"SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id = ?", {Value(id)}});
      }
    }
    // pg_terminate_backend only signals the backend: wait until the server has ended them.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (const auto& [sql, params] : alive) {
      while (conn_->execute(sql, params).int64_at(0, "n") != 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ADD_FAILURE() << "killed sessions of " << client << " did not end in 5 s";
          break;
        }
        std::this_thread::sleep_for(milliseconds(5));
      }
    }
    return static_cast<int>(alive.size());
  }

  // Stops every candidate still running and checks what it says: exit 0, still campaigning,
  // no fenced write refused (but up to `may_be_refused` of the named one's: writes a pause caught
  // between its check of the stop token and the statement). Returns the sum of the errors they
  // saw.
  long stop_candidates(const std::map<std::string, long>& may_be_refused = {}) {
    for (auto& [client, process] : candidates_) process->signal(SIGUSR1);
    long errors = 0;
    for (auto& [client, process] : candidates_) {
      auto r = process->wait();
      EXPECT_EQ(r.exit_code, 0) << client << ": " << r.err;
      EXPECT_EQ(field(r.out, "campaigning"), 1) << client << " stopped campaigning:\n" << r.out;
      const auto allowed = may_be_refused.find(client);
      EXPECT_LE(field(r.out, "fenced_rejected"),
                allowed == may_be_refused.end() ? 0 : allowed->second)
          << client << ": a write of its term came after a newer term's";
      errors += field(r.out, "errors") + field(r.out, "write_errors");
      const auto last = r.out.rfind("terms=");
      std::printf("[ election ] %s: %s %s", backend().name.c_str(), client.c_str(),
                  last == std::string::npos ? r.out.c_str() : r.out.substr(last).c_str());
    }
    candidates_.clear();
    return errors;
  }

  // The history check over every candidate: each term's work is a hold (from its start to the
  // moment its stop token ended it, or its last recorded moment when it was killed).
  void check_terms() {
    const auto holds = load_holds(histories_, false);
    const auto report = check_mutual_exclusion(holds);
    std::printf("[ history  ] %s: terms: %s\n", backend().name.c_str(), report.summary().c_str());
    EXPECT_TRUE(report.clean()) << report.summary();
    EXPECT_GT(report.holds, 0u);
    // The resource carries a term that worked, and none above the last one.
    std::int64_t highest = 0;
    for (const Hold& h : holds) highest = std::max(highest, h.token);
    if (!conn_) conn_ = backend().connect();
    EXPECT_GT(counter(), 0);
    EXPECT_LE(counter(), highest);
  }

  std::map<std::string, std::unique_ptr<FaultProxy>> proxies_;  // outlive the candidates
  std::map<std::string, std::unique_ptr<ChildProcess>> candidates_;
  std::vector<std::string> dead_;
};

// Leaders killed with SIGKILL three times; a new candidate joins for each.
TEST_P(ElectionFaultTest, KilledLeadersAreReplacedAndNoTwoTermsOverlap) {
  for (int i = 0; i < 3; ++i) start_candidate();
  auto first = wait_for_term_after(0, milliseconds(15000));
  ASSERT_TRUE(first) << "no candidate was elected";
  std::int64_t term = first->token;
  for (int kill = 0; kill < 3; ++kill) {
    const auto killed_at = kill_leader();
    ASSERT_NE(killed_at, 0) << "no leader to kill";
    auto next = wait_for_term_after(killed_at, milliseconds(10000));
    ASSERT_TRUE(next) << "no candidate took over after the leader was killed";
    EXPECT_GT(next->token, term);
    term = next->token;
    std::printf("[ election ] %s: %s leads term %lld, %lld ms after the kill (TTL %d ms)\n",
                backend().name.c_str(), next->client.c_str(), static_cast<long long>(term),
                static_cast<long long>((next->from_us - killed_at) / 1000), kTtlMs);
  }
  std::this_thread::sleep_for(milliseconds(200));  // the last term writes
  stop_candidates();
  check_terms();
}

// The leader's process paused with SIGSTOP past its TTL while another term begins, then resumed:
// the paused work's first look at its stop token (Term::stop_token looks at the lease's clock)
// ends it, so no work of its term is checked once the next term has begun, and it campaigns on.
// A write the pause caught between the work's check and its statement reaches the resource
// late: the fence refuses it (at most one per pause).
TEST_P(ElectionFaultTest, ALeaderPausedPastItsTtlStopsAsItWakes) {
  for (int i = 0; i < 3; ++i) start_candidate();
  auto first = wait_for_term_after(0, milliseconds(15000));
  ASSERT_TRUE(first) << "no candidate was elected";
  std::map<std::string, long> pauses;
  for (int round = 0; round < 2; ++round) {
    auto now = leader();
    ASSERT_TRUE(now && candidates_.count(now->second)) << "no leader";
    ChildProcess& paused = *candidates_.at(now->second);
    ++pauses[now->second];
    paused.signal(SIGSTOP);
    const auto paused_at = monotonic_us();
    auto next = wait_for_term_after(paused_at, milliseconds(10000), now->first.term);
    std::this_thread::sleep_for(milliseconds(300));  // the next term works meanwhile
    paused.signal(SIGCONT);
    ASSERT_TRUE(next) << "no candidate took over from the paused leader";
    std::printf("[ election ] %s: paused %s (term %lld); term %lld began %lld ms later\n",
                backend().name.c_str(), now->second.c_str(),
                static_cast<long long>(now->first.term), static_cast<long long>(next->token),
                static_cast<long long>((next->from_us - paused_at) / 1000));
    std::this_thread::sleep_for(milliseconds(500));  // the resumed one looks, and stops
  }
  stop_candidates(pauses);
  check_terms();
}

// Every session of the leader's killed on the server, twice: the election goes on (the leader
// keeps its term on new sessions, or another term begins).
TEST_P(ElectionFaultTest, ALeaderWhoseSessionsAreKilledOnTheServerNeverOverlapsTheNext) {
  for (int i = 0; i < 3; ++i) start_candidate();
  auto first = wait_for_term_after(0, milliseconds(15000));
  ASSERT_TRUE(first) << "no candidate was elected";
  for (int round = 0; round < 2; ++round) {
    auto now = leader();
    ASSERT_TRUE(now) << "no leader";
    const int killed = kill_sessions_of(now->second);
    const auto killed_at = monotonic_us();
    EXPECT_GT(killed, 0) << "no session of " << now->second << " found";
    auto later = wait_for_work_after(killed_at + kTtlMs * 1000, milliseconds(10000));
    ASSERT_TRUE(later) << "no term worked one TTL after the leader's sessions were killed";
    std::printf(
        "[ election ] %s: killed %d sessions of %s (term %lld); term %lld works a TTL later\n",
        backend().name.c_str(), killed, now->second.c_str(),
        static_cast<long long>(now->first.term), static_cast<long long>(later->token));
  }
  stop_candidates();
  check_terms();
}

// The leader's network to the election's database blackholed (its statements hang, its
// renewals never answer) while it still reaches the resource, twice: its stop token must end
// its work before another candidate's term begins, and its fenced writes must never come after
// the next term's. Once the network is back, it campaigns again.
TEST_P(ElectionFaultTest, ALeaderCutOffFromTheDatabaseStopsBeforeTheNextTermBegins) {
  for (int i = 0; i < 3; ++i) start_candidate(true);
  auto first = wait_for_term_after(0, milliseconds(15000));
  ASSERT_TRUE(first) << "no candidate was elected";
  for (int round = 0; round < 2; ++round) {
    auto now = leader();
    ASSERT_TRUE(now) << "no leader";
    auto& proxy = *proxies_.at(now->second);
    proxy.set_blackhole(true);
    const auto cut_at = monotonic_us();
    auto next = wait_for_term_after(cut_at, milliseconds(10000));
    ASSERT_TRUE(next) << "no candidate took over from the leader cut off";
    EXPECT_GT(next->token, now->first.term);
    EXPECT_NE(next->client, now->second);
    std::printf("[ election ] %s: cut %s off (term %lld); %s leads term %lld %lld ms later\n",
                backend().name.c_str(), now->second.c_str(),
                static_cast<long long>(now->first.term), next->client.c_str(),
                static_cast<long long>(next->token),
                static_cast<long long>((next->from_us - cut_at) / 1000));
    proxy.set_blackhole(false);
    proxy.close_all();  // its hung statements fail now
  }
  std::this_thread::sleep_for(milliseconds(200));  // the last term writes
  stop_candidates();
  check_terms();
}

// The server crashes while a leader works, stays down for a TTL, and comes back: the leader's
// work is stopped by its margin, and a new term begins once the server is back. Then that
// leader is killed, and another candidate that lived through the crash takes over.
class ElectionCrashTest : public ElectionFaultTest {
 protected:
  void SetUp() override {
    // The fixture and the candidates read the URL from the environment: the private server's
    // for this test.
    server_ = std::make_unique<PrivateServer>(backend().dialect, backend().url_env);
    ElectionFaultTest::SetUp();
  }
  void TearDown() override {
    ElectionFaultTest::TearDown();
    server_.reset();
  }

  std::unique_ptr<PrivateServer> server_;
};

TEST_P(ElectionCrashTest, ANewTermBeginsAfterTheServerRestartsAndNoneOverlaps) {
  for (int i = 0; i < 3; ++i) start_candidate();
  ASSERT_TRUE(wait_for_term_after(0, milliseconds(15000))) << "no candidate was elected";
  std::this_thread::sleep_for(milliseconds(300));  // the leader works
  auto working = leader();
  ASSERT_TRUE(working) << "no leader";
  const auto crashed_at = monotonic_us();
  server_->crash_and_restart(milliseconds(kTtlMs));
  const auto back_at = monotonic_us();
  conn_.reset();  // died with the server
  // A candidate may be elected before crash_and_restart has seen the server answer.
  auto next = wait_for_term_after(crashed_at, milliseconds(15000), working->first.term);
  ASSERT_TRUE(next) << "no candidate was elected after the restart";
  std::printf(
      "[ election ] %s: server down and back in %lld ms; %s leads term %lld, %+lld ms from then\n",
      backend().name.c_str(), static_cast<long long>((back_at - crashed_at) / 1000),
      next->client.c_str(), static_cast<long long>(next->token),
      static_cast<long long>((next->from_us - back_at) / 1000));
  // The candidates that saw the crash still campaign: kill the new leader (and start no one in
  // its place), another of them takes over.
  const auto killed_at = kill_leader(false);
  ASSERT_NE(killed_at, 0) << "no leader to kill after the restart";
  auto heir = wait_for_term_after(killed_at, milliseconds(10000));
  ASSERT_TRUE(heir) << "no candidate took over from the leader killed after the restart";
  EXPECT_GT(heir->token, next->token);
  std::this_thread::sleep_for(milliseconds(200));  // the last term writes
  EXPECT_GT(stop_candidates(), 0) << "no candidate noticed the crash";
  check_terms();
}

std::vector<FaultCase> election_cases() {
  std::vector<FaultCase> out;
  for (const FaultCase& c : fault_cases()) {
    if (c.strategy.name == "unique_key") out.push_back(c);  // an election's lease is one
  }
  return out;
}

struct ElectionCaseName {
  std::string operator()(const ::testing::TestParamInfo<FaultCase>& info) const {
    return "election_" + info.param.backend.name;
  }
};

INSTANTIATE_TEST_SUITE_P(Faults, ElectionFaultTest, ::testing::ValuesIn(election_cases()),
                         ElectionCaseName());
INSTANTIATE_TEST_SUITE_P(Faults, ElectionCrashTest, ::testing::ValuesIn(election_cases()),
                         ElectionCaseName());

}  // namespace
}  // namespace dblock::testing
