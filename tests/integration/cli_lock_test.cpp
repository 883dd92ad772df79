// SPDX-License-Identifier: Apache-2.0
// `dblock run` and `dblock locks` as a cron job or an operator uses them: exit statuses passed
// through, a held lock refusing (or waiting for) a second run, release however the command ends,
// signals reaching the command, renewal past the TTL, a lost lease stopping the command, and the
// listing in both forms.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli_fixture.hpp"

namespace dblock::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class CliLockTest : public CliFixture {
 protected:
  // True when a one-try `run` gets the lock at once.
  bool lock_is_free() const { return run(run_sh("exit 0")).exit_code == 0; }

  // The `locks --json` entry for key_, or null.
  nlohmann::json listed() const {
    auto r = run(cli("locks", {"--json"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto all = nlohmann::json::parse(r.out);
    EXPECT_TRUE(all.is_array()) << r.out;
    for (const auto& entry : all) {
      if (entry.value("key", "") == key_) return entry;
    }
    return nullptr;
  }

  static void expect_one_line(const ProcessResult& r, const std::string& fragment) {
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("dblock: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
};

TEST_P(CliLockTest, RunsTheCommandAndPassesItsExitCodeThrough) {
  auto r = run(run_sh("echo ran > '" + file("ran") + "'; exit 7"));
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(read_text_file(file("ran")), "ran\n");
  EXPECT_TRUE(lock_is_free());
}

TEST_P(CliLockTest, TheCommandInheritsNoDatabaseSession) {
  // Every open descriptor of the command, as /proc names them: a database socket would show
  // as socket:[...].
  auto r = run(run_sh("for f in /proc/$$/fd/*; do readlink \"$f\"; done; exit 0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("socket:"), std::string::npos) << r.out;
}

TEST_P(CliLockTest, ASecondRunIsRefusedWhileHeldOrWaitsWithWait) {
  auto first = start(run_sh("touch '" + file("started") + "'; sleep 2"));
  ASSERT_TRUE(wait_for_file(file("started")));

  auto began = Clock::now();
  auto refused = run(run_sh("touch '" + file("refused-ran") + "'"));
  EXPECT_LT(Clock::now() - began, 2s);
  EXPECT_EQ(refused.exit_code, 75) << refused.err;
  expect_one_line(refused, "lock " + key_ + " is held by someone else; not running sh");
  EXPECT_FALSE(fs::exists(file("refused-ran")));

  auto waited = run(run_sh("touch '" + file("waited-ran") + "'", {"--wait", "5s"}));
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_TRUE(fs::exists(file("waited-ran")));
  EXPECT_EQ(first->wait().exit_code, 0);
}

TEST_P(CliLockTest, ReleasesTheLockHoweverTheCommandEnds) {
  EXPECT_EQ(run(run_sh("exit 3")).exit_code, 3);
  EXPECT_TRUE(lock_is_free());
  auto killed = run(run_sh("kill -9 $$"));
  EXPECT_EQ(killed.exit_code, 137) << killed.err;
  EXPECT_TRUE(lock_is_free());
  auto missing = run(cli("run", {"--key", key_, "--", "dblock-no-such-command"}));
  EXPECT_EQ(missing.exit_code, 127);
  expect_one_line(missing, "cannot run dblock-no-such-command");
  std::ofstream(file("plain")) << "echo not executable\n";
  auto not_executable = run(cli("run", {"--key", key_, "--", file("plain")}));
  EXPECT_EQ(not_executable.exit_code, 126);
  expect_one_line(not_executable, "cannot run " + file("plain"));
  EXPECT_TRUE(lock_is_free());
}

TEST_P(CliLockTest, ForwardsSigtermToTheCommandAndReleases) {
  // A shell writes its pid to the file named by $0, then becomes dblock: the test can signal it.
  std::vector<std::string> argv{"/bin/sh", "-c", "echo $$ > \"$0\"; exec \"$@\"", file("pid")};
  auto run_argv = run_sh("trap 'echo term > \"" + file("term") + "\"; exit 9' TERM; touch '" +
                         file("started") + "'; while :; do sleep 0.05; done");
  argv.insert(argv.end(), run_argv.begin(), run_argv.end());
  ChildProcess dblock(argv, env());
  ASSERT_TRUE(wait_for_file(file("started")));
  const pid_t pid = std::stoi(read_text_file(file("pid")));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto r = dblock.wait();
  EXPECT_EQ(r.exit_code, 9) << r.err;
  // The whole group got SIGTERM: the shell may report its `sleep` "Terminated"; dblock is quiet.
  EXPECT_EQ(r.err.find("dblock:"), std::string::npos) << r.err;
  EXPECT_EQ(read_text_file(file("term")), "term\n");
  EXPECT_TRUE(lock_is_free());
}

TEST_P(CliLockTest, RenewsTheLeaseWhileTheCommandOutlivesTheTtl) {
  // The holder runs until told to stop, so a slow machine cannot end it before the late try. A
  // renewal every 583 ms, and the command stopped only when none succeeded for 1.75 s: a test
  // machine busy with other suites may hold a renewal back for most of a second (with the
  // default margins of a 1 s TTL, 445 ms late already stopped the command).
  auto holder = start(run_sh(
      "touch '" + file("started") + "'; while [ ! -e '" + file("stop") + "' ]; do sleep 0.05; done",
      {"--ttl", "2s", "--stop-margin", "250ms", "--kill-after", "100ms"}));
  ASSERT_TRUE(wait_for_file(file("started")));
  auto started = Clock::now();
  std::this_thread::sleep_until(started + 4500ms);  // past two TTLs
  auto late = run(run_sh("touch '" + file("late-ran") + "'"));
  EXPECT_EQ(late.exit_code, 75) << late.err;
  EXPECT_FALSE(fs::exists(file("late-ran")));
  std::ofstream(file("stop")).close();
  auto held = holder->wait();
  EXPECT_EQ(held.exit_code, 0) << held.err;
  EXPECT_TRUE(lock_is_free());
}

TEST_P(CliLockTest, LosingTheLeaseStopsTheCommandAndExits75) {
  auto holder = start(run_sh("trap 'touch \"" + file("term") + "\"; exit 0' TERM; touch '" +
                                 file("started") + "'; while :; do sleep 0.05; done",
                             {"--ttl", "1s"}));
  ASSERT_TRUE(wait_for_file(file("started")));
  auto conn = backend().connect();
  conn->execute("DELETE FROM " + TableNames(prefix_).qualified(backend().dialect, "locks") +
                    " WHERE lock_key = " + backend().param(1),
                {Value(key_)});
  auto r = holder->wait();
  EXPECT_EQ(r.exit_code, 75) << r.err;
  // dblock's one line; the shell may add "Terminated" for its `sleep`, which got SIGTERM too.
  EXPECT_EQ(r.err.rfind("dblock: lost the lock " + key_ + " while sh was running", 0), 0u) << r.err;
  std::istringstream lines(r.err);
  int dblock_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("dblock: ", 0) == 0) {
      ++dblock_lines;
    } else {
      EXPECT_EQ(line, "Terminated");
    }
  }
  EXPECT_EQ(dblock_lines, 1) << r.err;
  EXPECT_TRUE(fs::exists(file("term")));
}

TEST_P(CliLockTest, LocksListsTheHolderUntilReleased) {
  auto holder = start(run_sh("touch '" + file("started") + "'; sleep 2"));
  ASSERT_TRUE(wait_for_file(file("started")));

  nlohmann::json entry = listed();
  ASSERT_TRUE(entry.is_object()) << "key " << key_ << " not listed";
  std::set<std::string> fields;
  for (const auto& [name, value] : entry.items()) fields.insert(name);
  EXPECT_EQ(fields,
            (std::set<std::string>{"key", "lease_id", "owner_host", "owner_process", "owner_thread",
                                   "hold_count", "fencing_token", "acquired_at", "expires_at",
                                   "expired", "metadata", "waiters", "kind"}));
  EXPECT_EQ(entry["hold_count"], 1);
  EXPECT_EQ(entry["waiters"], 0);
  EXPECT_GT(entry["fencing_token"].get<std::int64_t>(), 0);
  EXPECT_EQ(entry["expired"], false);
  EXPECT_EQ(entry["metadata"], nlohmann::json({{"command", "sh"}}));
  EXPECT_FALSE(entry["lease_id"].get<std::string>().empty());

  auto table = run(cli("locks", {}));
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.rfind("KEY ", 0), 0u) << table.out;
  EXPECT_NE(table.out.find(key_), std::string::npos) << table.out;

  EXPECT_EQ(holder->wait().exit_code, 0);
  EXPECT_TRUE(listed().is_null());
  auto empty = run(cli("locks", {}));
  EXPECT_EQ(empty.out, "no locks held\n");
}

TEST_P(CliLockTest, LocksWithoutTablesSaysToMigrate) {
  auto r = run({DBLOCK_CLI_PATH, "locks", "--prefix", unique_name("none") + "_"});
  EXPECT_EQ(r.exit_code, 78);
  expect_one_line(r, "run `dblock migrate up`");
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliLockTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
