// SPDX-License-Identifier: Apache-2.0
// `dblock run` as "exactly once across hosts": whatever the command does with SIGTERM (ignores
// it, is a wrapper whose worker ignores it, daemonises), its processes are gone before another
// run of the key can start, when the lease is lost to a network cut or to an operator's forced
// release, and when the command leaves processes behind. Every case records, from inside the
// commands, when each run was working (heartbeats stamped with one clock, `date +%s%N`) and the
// fencing token it was given, and checks that no two runs overlapped and that tokens increase.
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_heartbeats.hpp"
#include "fault_proxy.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

class CliRunTest : public CliHeartbeatTest {};

TEST_P(CliRunTest, ANetworkCutStopsACommandThatIgnoresTermBeforeTheLeaseCanExpire) {
  const DatabaseUrl direct = backend().url();
  FaultProxy proxy(direct.host, direct.port);
  // url_ with the proxy's address in place of the server's.
  const auto at = url_.find('@');
  const auto slash = url_.find('/', at);
  ASSERT_NE(at, std::string::npos);
  const std::string cut_url =
      url_.substr(0, at + 1) + "127.0.0.1:" + std::to_string(proxy.port()) + url_.substr(slash);
  ChildProcess first(run_sh(beat(0, true), {"--ttl", "1s"}), env(cut_url));
  ASSERT_TRUE(wait_for_beats());
  proxy.set_blackhole(true);
  const auto cut = std::chrono::steady_clock::now();
  auto second = start(run_sh(beat(4), {"--wait", "10s"}));
  auto r = first.wait();
  const std::int64_t first_ended = wall_ns();
  // Renewals go out every 222 ms; SIGTERM at 667 ms after the last that succeeded, SIGKILL
  // 167 ms later.
  EXPECT_LT(std::chrono::steady_clock::now() - cut, 2500ms);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("lost the lock " + key_ + " while sh was running (not renewed for"),
            std::string::npos)
      << r.err;
  auto r2 = second->wait();
  EXPECT_EQ(r2.exit_code, 0) << r2.err;
  expect_first_run_ended_by(first_ended);
  expect_no_overlap(2);
}

TEST_P(CliRunTest, AForcedReleaseStopsAWrapperAndItsWorkerGrandchild) {
  // The wrapper dies of SIGTERM; its worker ignores it and must be killed.
  auto first = start(run_sh(beat(0, true) + " & wait", {"--ttl", "2s"}));
  ASSERT_TRUE(wait_for_beats());
  const std::int64_t token = spans().at(0).token;
  auto released = run(cli("release", {"--key", key_, "--force"}));
  EXPECT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out.rfind("released lock " + key_ + " held by ", 0), 0u) << released.out;
  EXPECT_NE(released.out.find("fencing token " + std::to_string(token)), std::string::npos)
      << released.out;
  const auto at = std::chrono::steady_clock::now();
  auto r = first->wait();
  const std::int64_t first_ended = wall_ns();
  // Found at the next renewal (every 444 ms), SIGKILL 333 ms after SIGTERM.
  EXPECT_LT(std::chrono::steady_clock::now() - at, 1500ms);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("its lease is gone"), std::string::npos) << r.err;
  expect_first_run_ended_by(first_ended);
  auto second = run(run_sh(beat(3)));
  EXPECT_EQ(second.exit_code, 0) << second.err;
  expect_no_overlap(2);
}

// dblock killed with SIGKILL cannot stop its command; the guard it started beside the command
// does: SIGTERM to the whole group (the wrapper dies of it, its worker ignores it), SIGKILL
// --kill-after later. Without it the worker would run on while the lease expires and another
// run starts.
TEST_P(CliRunTest, AKilledRunsWholeCommandIsStoppedByItsGuard) {
  auto first = start(run_sh(beat(0, true) + " & wait", {"--ttl", "2s"}));
  ASSERT_TRUE(wait_for_beats());
  first->signal(SIGKILL);
  EXPECT_EQ(first->wait().exit_code, 128 + SIGKILL);
  const std::int64_t killed = wall_ns();
  // SIGKILL comes 333 ms (--kill-after: half of a third of the TTL) after dblock died.
  std::this_thread::sleep_for(700ms);
  expect_first_run_ended_by(killed + 500'000'000);
  auto second = run(run_sh(beat(3), {"--wait", "10s"}));
  EXPECT_EQ(second.exit_code, 0) << second.err;
  expect_no_overlap(2);
}

TEST_P(CliRunTest, ADaemonLeftBehindIsStoppedBeforeTheLockIsReleased) {
  for (bool cgroup : {true, false}) {
    SCOPED_TRACE(cgroup ? "cgroup where possible" : "--no-cgroup");
    std::filesystem::remove(file("log"));
    std::vector<std::string> options{"--ttl", "2s"};
    if (!cgroup) options.push_back("--no-cgroup");
    // Double fork and setsid: the worker leaves the command's process group and session and
    // is re-parented away from the command, which then exits 5.
    auto first = start(run_sh("(setsid " + beat(0, true) + " &); sleep 0.3; exit 5", options));
    ASSERT_TRUE(wait_for_beats());
    auto second = start(run_sh(beat(3), {"--wait", "10s"}));
    auto r = first->wait();
    EXPECT_EQ(r.exit_code, 5) << r.err;
    EXPECT_NE(r.err.find("left processes running"), std::string::npos) << r.err;
    EXPECT_EQ(second->wait().exit_code, 0);
    expect_no_overlap(2);
  }
}

// A `dblock run` killed with SIGKILL cannot remove its cgroup; the next run on the machine
// removes such a cgroup once it is empty and its run's pid is gone.
TEST_P(CliRunTest, AKilledRunsEmptyCgroupIsRemovedByTheNextRun) {
  // The cgroup v2 `dblock run` makes its job's cgroup in: the one it starts in, this process's,
  // under the cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid setup).
  std::string root;
  for (const char* candidate : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs;
    if (::statfs(candidate, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
      root = candidate;
      break;
    }
  }
  // The suite runs as root on a cgroup v2 machine (as CI's); anywhere else this cannot check the
  // sweep, and says so by failing rather than passing unchecked.
  ASSERT_FALSE(root.empty()) << "no cgroup v2 mounted: run the suite as root on a cgroup v2 "
                                "system to check dblock run's cgroups";
  std::string own;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  const std::string parent = root + (own == "/" ? std::string() : own);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = parent + "/dblock-run-" + std::to_string(dead);
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0)
      << stale << ": " << std::strerror(errno)
      << "; run the suite as root on a cgroup v2 system to check dblock run's cgroups";
  auto r = run(run_sh("exit 0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const bool left = ::access(stale.c_str(), F_OK) == 0;
  if (left) ::rmdir(stale.c_str());
  EXPECT_FALSE(left) << stale << " was left behind";
}

TEST_P(CliRunTest, StartedWithSigchldIgnoredItStillSeesTheCommandEndAndGivesItCleanSignals) {
  // perl sets SIGCHLD to SIG_IGN and execs: the disposition is kept across exec.
  const std::string ignore_chld = "$SIG{CHLD} = 'IGNORE'; exec @ARGV or die";
  auto precondition =
      run_process({"/usr/bin/perl", "-e", ignore_chld, "grep", "SigIgn", "/proc/self/status"});
  ASSERT_NE(precondition.out.find("SigIgn:\t00000000000"), std::string::npos) << precondition.out;
  ASSERT_NE(std::stoull(precondition.out.substr(8), nullptr, 16) & (1ull << (SIGCHLD - 1)), 0u)
      << precondition.out;
  std::vector<std::string> argv{"/usr/bin/timeout", "-s", "KILL",     "10",
                                "/usr/bin/perl",    "-e", ignore_chld};
  auto run_argv = run_sh("grep -E '^Sig(Blk|Ign)' /proc/self/status; exit 4");
  argv.insert(argv.end(), run_argv.begin(), run_argv.end());
  auto r = run(argv);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.out.find("SigBlk:\t0000000000000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SigIgn:\t0000000000000000"), std::string::npos) << r.out;
  auto again = run(run_sh("exit 0"));
  EXPECT_EQ(again.exit_code, 0) << "the lock was not released: " << again.err;
}

TEST_P(CliRunTest, TheCommandLearnsItsLease) {
  // The command prints what it was told, then lists the lock table.
  auto listed =
      run(run_sh("echo \"$DBLOCK_KEY|$DBLOCK_FENCING_TOKEN|$DBLOCK_LEASE_ID|"
                 "$DBLOCK_OWNER\"; '" +
                 std::string(DBLOCK_CLI_PATH) + "' locks --prefix " + prefix_ + " --json"));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto bar = listed.out.find('\n');
  std::istringstream fields(listed.out.substr(0, bar));
  std::string key, token, lease_id, owner;
  std::getline(fields, key, '|');
  std::getline(fields, token, '|');
  std::getline(fields, lease_id, '|');
  std::getline(fields, owner, '|');
  auto rows = nlohmann::json::parse(listed.out.substr(bar + 1));
  ASSERT_EQ(rows.size(), 1u) << listed.out;
  EXPECT_EQ(key, key_);
  EXPECT_EQ(token, std::to_string(rows[0]["fencing_token"].get<std::int64_t>()));
  EXPECT_EQ(lease_id, rows[0]["lease_id"].get<std::string>());
  EXPECT_EQ(owner, rows[0]["owner_host"].get<std::string>() + "/" +
                       rows[0]["owner_process"].get<std::string>() + "/" +
                       rows[0]["owner_thread"].get<std::string>());
}

TEST_P(CliRunTest, AStopTimelineThatCannotBeKeptIsRefused) {
  for (const auto& options : std::vector<std::vector<std::string>>{
           {"--ttl", "1s", "--stop-margin", "1s"},
           {"--ttl", "3s", "--stop-margin", "1s", "--kill-after", "1s"},
           {"--ttl", "3s", "--kill-after", "2s"}}) {
    auto r = run(run_sh("touch '" + file("ran") + "'", options));
    expect_one_line_error(r, 64, "must be shorter than --stop-margin", "");
    EXPECT_FALSE(std::filesystem::exists(file("ran")));
  }
}

// Issue: host A ran `dblock run --key nightly-report -- <a 0.3 s job>` and host B fired the same
// line 0.5 s later (cron start times differ that much); both ran. Here each schedule slot starts
// A's run, and B's only once A's has finished (the worst case for the promise), a few hundred ms
// later. Without --min-hold both run (the scenario reproduces); with it exactly one run happens
// per slot, B exits 75 without a word (-q), `dblock locks` shows the key as finished, and the
// next slot runs again.
TEST_P(CliRunTest, ACronJobOnTwoSkewedHostsRunsOncePerSlot) {
  const std::string log = file("runs.log");
  const auto lines = [&] {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  const std::string job = "sleep 0.1; echo ran >> '" + log + "'";
  // Without a minimum hold: both hosts run the short job.
  EXPECT_EQ(run(run_sh(job)).exit_code, 0);
  EXPECT_EQ(run(run_sh(job)).exit_code, 0);
  ASSERT_EQ(lines(), 2) << "the scenario did not reproduce: the test would test nothing";
  std::filesystem::remove(log);

  constexpr auto kSlot = 2500ms;
  const std::vector<std::string> cron = {"--min-hold", "1.5s", "-q"};
  for (int slot = 0; slot < 3; ++slot) {
    const auto started = std::chrono::steady_clock::now();
    const ProcessResult a = run(run_sh(job, cron));
    EXPECT_EQ(a.exit_code, 0) << "slot " << slot << ": " << a.err;
    if (slot == 0) {
      const ProcessResult locks = run(cli("locks", {}));
      EXPECT_NE(locks.out.find("finished"), std::string::npos) << locks.out;
    }
    std::this_thread::sleep_for(300ms);  // host B's cron fires a little later
    const ProcessResult b = run(run_sh(job, cron));
    EXPECT_EQ(b.exit_code, 75) << "slot " << slot << ": the job ran twice";
    EXPECT_EQ(b.out + b.err, "") << "-q must keep cron quiet";
    EXPECT_EQ(lines(), slot + 1) << "slot " << slot;
    std::this_thread::sleep_until(started + kSlot);
  }
}

// `--prometheus FILE`: each way a run ends is counted in the job's file, counters carrying over
// from run to run, as node_exporter's textfile collector reads it.
TEST_P(CliRunTest, EachWayARunEndsIsCountedInTheJobsMetricsFile) {
  const std::string metrics = file("job.prom");
  const std::vector<std::string> with_file = {"--prometheus", metrics, "--ttl", "2s"};
  const std::string labels = "{key=\"" + key_ + "\"}";
  const auto value = [&](const std::string& name) {
    return metric_samples(metrics).at(name + labels);
  };

  EXPECT_EQ(run(run_sh("sleep 0.2", with_file)).exit_code, 0);
  EXPECT_EQ(value("dblock_run_runs_total"), 1);
  EXPECT_EQ(value("dblock_run_failures_total"), 0);
  EXPECT_EQ(value("dblock_run_last_exit_code"), 0);
  EXPECT_GE(value("dblock_run_last_duration_seconds"), 0.2);
  const double succeeded_at = value("dblock_run_last_success_timestamp_seconds");
  EXPECT_GT(succeeded_at, 1.7e9);

  EXPECT_EQ(run(run_sh("exit 3", with_file)).exit_code, 3);
  EXPECT_EQ(value("dblock_run_failures_total"), 1);
  EXPECT_EQ(value("dblock_run_last_exit_code"), 3);
  EXPECT_EQ(value("dblock_run_last_success_timestamp_seconds"), succeeded_at);

  // Busy: another run holds the lock.
  const std::string holding = file("holding");
  auto holder = start(run_sh("touch '" + holding + "'; sleep 30", {"--ttl", "2s"}));
  ASSERT_TRUE(wait_for_file(holding));
  EXPECT_EQ(run(run_sh("true", with_file)).exit_code, 75);
  EXPECT_EQ(value("dblock_run_busy_total"), 1);
  EXPECT_EQ(value("dblock_run_failures_total"), 1) << "busy is no failure";
  EXPECT_EQ(value("dblock_run_last_duration_seconds"), 0);
  // Stopped by a signal while it waits (--wait): not run, and recorded with the signal's code.
  std::vector<std::string> waiting_args = with_file;
  waiting_args.insert(waiting_args.end(), {"--wait", "30s"});
  auto waiting = start(run_sh("touch '" + file("ran") + "'", waiting_args));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // connected, waiting
  waiting->signal(SIGTERM);
  EXPECT_EQ(waiting->wait().exit_code, 128 + SIGTERM);
  EXPECT_FALSE(std::filesystem::exists(file("ran")));
  EXPECT_EQ(value("dblock_run_runs_total"), 4) << "a run stopped while waiting was not recorded";
  EXPECT_EQ(value("dblock_run_failures_total"), 2);
  EXPECT_EQ(value("dblock_run_last_exit_code"), 128 + SIGTERM);
  EXPECT_EQ(value("dblock_run_busy_total"), 1);
  holder->signal(SIGTERM);
  EXPECT_EQ(holder->wait().exit_code, 128 + SIGTERM);

  // Lost: an operator's forced release while the command runs.
  const std::string started = file("started");
  auto losing = start(run_sh("touch '" + started + "'; sleep 30", with_file));
  ASSERT_TRUE(wait_for_file(started));
  EXPECT_EQ(run(cli("release", {"--key", key_, "--force"})).exit_code, 0);
  EXPECT_EQ(losing->wait().exit_code, 75);
  EXPECT_EQ(value("dblock_run_lost_total"), 1);
  EXPECT_EQ(value("dblock_run_failures_total"), 3);
  EXPECT_EQ(value("dblock_run_last_exit_code"), 75);

  // dblock failed: nothing listens where the URL points.
  const ProcessResult unreachable = run_process(
      run_sh("true", with_file), env(backend().dialect == Dialect::kPostgreSQL
                                         ? "postgresql://u:p@127.0.0.1:1/db?connect_timeout=2"
                                         : "mysql://u:p@127.0.0.1:1/db?connect_timeout=2"));
  EXPECT_EQ(unreachable.exit_code, 69) << unreachable.err;
  EXPECT_EQ(value("dblock_run_runs_total"), 6);
  EXPECT_EQ(value("dblock_run_failures_total"), 4);
  EXPECT_EQ(value("dblock_run_last_exit_code"), 69);
  EXPECT_EQ(value("dblock_run_busy_total"), 1);
  EXPECT_EQ(value("dblock_run_lost_total"), 1);
}

TEST_P(CliRunTest, ANegativeMinHoldIsRefused) {
  const ProcessResult r = run(run_sh("true", {"--min-hold", "-1s"}));
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("--min-hold"), std::string::npos) << r.err;
}

TEST_P(CliRunTest, ALockDelayOutOfRangeIsRefused) {
  for (const std::string bad : {"-1s", "2h"}) {
    const ProcessResult r = run(run_sh("touch '" + file("ran") + "'", {"--lock-delay", bad}));
    EXPECT_EQ(r.exit_code, 64) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--lock-delay"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(file("ran"))) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliRunTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
