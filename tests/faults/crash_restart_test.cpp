// SPDX-License-Identifier: Apache-2.0
// Scenario 5: the server crashes under load and comes back (PostgreSQL: pg_ctl stop -m
// immediate, then start; MariaDB: SIGKILL mariadbd, then start), on a private server started
// for this test, so the servers other tests use are never touched. Worker processes acquire,
// write with their fencing token and release in a loop throughout.
//
// Expected: the clients see errors while the server is away and acquire again after it is back;
// no acquisition is granted twice and fencing tokens never go backwards (history check); no key
// whose release the server acknowledged is held after the restart (a session lock: no key at all
// is held once the clients are done, and tokens after the restart are above all before it).
//
// Transactional strategies increment a counter in each lease's transaction instead of the fenced
// write. The counter must end between the acknowledged commits and those plus the releases whose
// reply the crash swallowed (a COMMIT in flight may or may not have landed): no acknowledged
// commit is lost and nothing is applied twice. The row lock's history is checked for overlaps
// and token order; the optimistic one for one commit per version.
#include <algorithm>
#include <csignal>
#include <set>
#include <thread>

#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "fault_fixture.hpp"
#include "private_server.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

class CrashRestartTest : public FaultTest {
 protected:
  void SetUp() override {
    // The fixture reads the URL from the environment: the private server's for this test.
    server_ = std::make_unique<PrivateServer>(backend().dialect, backend().url_env);
    FaultTest::SetUp();
  }
  void TearDown() override {
    FaultTest::TearDown();
    server_.reset();
  }

  std::unique_ptr<PrivateServer> server_;
};

long field(const std::string& out, const std::string& name) {
  auto pos = out.find(name + "=");
  return pos == std::string::npos ? -1 : std::stol(out.substr(pos + name.size() + 1));
}

TEST_P(CrashRestartTest, ClientsRecoverAndNothingIsGrantedTwiceOrComesBack) {
  // The clients run until they have had kAfterRestart with the server back (however long the
  // restart takes on a loaded machine), kMaxSeconds at most.
  constexpr int kWorkers = 4, kMaxSeconds = 60, kTtlMs = 2000;
  constexpr milliseconds kAfterRestart(3000);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    const std::string client = "w" + std::to_string(w);
    workers.push_back(
        std::make_unique<ChildProcess>(worker_argv("loop", "shared", kTtlMs, new_history(client),
                                                   client, {std::to_string(kMaxSeconds)}),
                                       std::map<std::string, std::string>{}));
  }
  std::this_thread::sleep_for(milliseconds(2000));
  const auto crashed_at = monotonic_us();
  server_->crash_and_restart(milliseconds(500));
  const auto back_at = monotonic_us();
  std::printf("[ crash    ] %s: server down and recovered in %lld ms\n", backend().name.c_str(),
              static_cast<long long>((back_at - crashed_at) / 1000));
  std::this_thread::sleep_for(kAfterRestart);
  for (auto& w : workers) w->signal(SIGUSR1);
  long acquired = 0, errors = 0, commits = 0, in_doubt = 0, conflicts = 0;
  for (auto& w : workers) {
    auto r = w->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(field(r.out, "acquired"), 0) << r.out;
    // Each acquire here is a fresh one: a fenced write it cannot make means it re-entered a
    // hold whose token was used already (a hold orphaned by the crash, never given back).
    EXPECT_EQ(field(r.out, "fenced_rejected"), 0) << r.out;
    acquired += field(r.out, "acquired");
    errors += field(r.out, "errors");
    commits += field(r.out, "released");
    in_doubt += field(r.out, "in_doubt");
    conflicts += field(r.out, "conflicts");
    std::printf("[ crash    ] %s: worker %s", backend().name.c_str(), r.out.c_str());
  }
  EXPECT_GT(errors, 0) << "no client noticed the crash";

  auto report = check_histories();
  auto holds = load_holds(histories_, strategy().ends_with_ttl);
  std::size_t after_restart = 0;
  std::set<std::string> released_keys;
  for (const auto& h : holds) {
    if (h.key == "shared" && h.from_us > back_at) ++after_restart;
    if (h.key != "shared" && h.release_outcome == "released") released_keys.insert(h.key);
  }
  EXPECT_GT(after_restart, 0u) << "no client acquired the key after the restart";
  EXPECT_GT(released_keys.size(), 0u);
  conn_ = backend().connect();  // the fixture's session died with the server
  if (strategy().transactional) {
    // Acknowledged commits survived the crash; nothing was applied twice.
    const auto count = counter();
    EXPECT_GE(count, commits) << "an acknowledged commit was lost in the crash";
    EXPECT_LE(count, commits + in_doubt) << "more increments than commits";
    std::printf(
        "[ crash    ] %s: %ld acquisitions, %ld commits (+%ld in doubt), %ld conflicts, counter "
        "%lld, %ld client errors, %zu holds after the restart\n",
        backend().name.c_str(), acquired, commits, in_doubt, conflicts,
        static_cast<long long>(count), errors, after_restart);
    return;
  }
  if (!strategy().lock_row) {
    // A session lock lives in server memory: the crash ended every session, so no lock may be
    // left behind, and a token taken after the restart is above every token before it.
    not_applicable(
        "no lock row to come back: checked instead that after the restart every key the "
        "clients used is free to a new owner, with a token above every token handed out");
    std::int64_t highest = 0;
    std::set<std::string> keys;
    for (const auto& h : holds) {
      highest = std::max(highest, h.token);
      keys.insert(h.key);
    }
    auto pool = open_pool(backend().url(), {.max_size = 2});  // sessions born after the restart
    auto lock = make_lock(*pool);
    LockOptions fresh;
    fresh.owner = Owner::named("after-restart");
    std::size_t held = 0;
    for (const auto& key : keys) {
      auto lease = lock->try_acquire(key, fresh);
      if (!lease) {
        ++held;
        continue;
      }
      EXPECT_GT(lease->fencing_token(), highest) << key;
      EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased) << key;
    }
    EXPECT_EQ(held, 0u) << "keys still held after every client released or died";
    std::printf(
        "[ crash    ] %s: %ld acquisitions, %ld client errors, %zu after the restart, "
        "%zu keys free after the run\n",
        backend().name.c_str(), acquired, errors, after_restart, keys.size() - held);
    return;
  }
  // Keys whose release the server acknowledged stay released across the crash.
  std::size_t came_back = 0;
  for (const auto& row : strategy().list_rows(*conn_, tables_)) {
    came_back += released_keys.count(row.key);
  }
  EXPECT_EQ(came_back, 0u);
  std::printf(
      "[ crash    ] %s: %ld acquisitions, %ld client errors, %zu after the restart, "
      "%zu acknowledged releases checked\n",
      backend().name.c_str(), acquired, errors, after_restart, released_keys.size());
}

INSTANTIATE_TEST_SUITE_P(Faults, CrashRestartTest, ::testing::ValuesIn(fault_cases()),
                         FaultCaseName());

}  // namespace
}  // namespace dblock::testing
