// SPDX-License-Identifier: Apache-2.0
// `dblock release` as an operator uses it (refuses a live lease without --force, checks the
// owner, says who held the lock and its token, keeps tokens rising), `dblock locks
// --key-prefix`, and `dblock --version`.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_fixture.hpp"
#include "dblock/open.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/version.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

class CliReleaseTest : public CliFixture {
 protected:
  // The `locks --json` entry for `key`, or null.
  nlohmann::json listed(const std::string& key) const {
    auto r = run(cli("locks", {"--json", "--key-prefix", key}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& entry : nlohmann::json::parse(r.out)) {
      if (entry.value("key", "") == key) return entry;
    }
    return nullptr;
  }
  std::vector<std::string> release(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--key", key_});
    return cli("release", args);
  }
};

TEST_P(CliReleaseTest, ALiveLeaseIsReleasedOnlyWithForceAndTheNextTokenIsHigher) {
  auto holder = start(run_sh("touch '" + file("started") + "'; sleep 5", {"--ttl", "2s"}));
  ASSERT_TRUE(wait_for_file(file("started")));
  nlohmann::json row = listed(key_);
  ASSERT_TRUE(row.is_object());
  const std::string token = std::to_string(row["fencing_token"].get<std::int64_t>());
  const std::string holder_text = row["owner_host"].get<std::string>() + "/" +
                                  row["owner_process"].get<std::string>() + "/" +
                                  row["owner_thread"].get<std::string>();

  // Without --force: the owner must be named, and a live lease is refused even then.
  expect_one_line_error(run(release({})), 64, "--owner-host", "");
  auto live = run(release({"--owner-host", row["owner_host"]}));
  expect_one_line_error(live, 75, "pass --force", "");
  EXPECT_NE(live.err.find(holder_text), std::string::npos) << live.err;
  EXPECT_NE(live.err.find("fencing token " + token), std::string::npos) << live.err;
  // Another owner's lock is not released, forced or not.
  expect_one_line_error(run(release({"--force", "--owner-thread", "someone-else"})), 1,
                        "not by the owner given", "");
  ASSERT_TRUE(listed(key_).is_object());

  auto forced = run(release({"--force", "--owner-process", row["owner_process"]}));
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  // The expiry shown is the one of the moment it was released (renewals move it on).
  const std::string said = "released lock " + key_ + " held by " + holder_text + " (lease " +
                           row["lease_id"].get<std::string>() + ", fencing token " + token +
                           ", live until ";
  EXPECT_EQ(forced.out.rfind(said, 0), 0u) << forced.out;
  EXPECT_TRUE(forced.out.ends_with("Z) (forced)\n")) << forced.out;
  EXPECT_TRUE(listed(key_).is_null());
  EXPECT_EQ(holder->wait().exit_code, 75);

  auto next = run(run_sh("echo $DBLOCK_FENCING_TOKEN"));
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_GT(std::stoll(next.out), std::stoll(token));
  expect_one_line_error(run(release({"--force"})), 1, "is not held; nothing released", "");
}

TEST_P(CliReleaseTest, AnExpiredLeaseIsReleasedForItsOwner) {
  // A shell writes its pid to the file named by $0, then becomes dblock: the test kills it.
  std::vector<std::string> argv{"/bin/sh", "-c", "echo $$ > \"$0\"; exec \"$@\"", file("pid")};
  auto run_argv = run_sh("touch '" + file("started") + "'; sleep 5", {"--ttl", "1s"});
  argv.insert(argv.end(), run_argv.begin(), run_argv.end());
  ChildProcess dblock(argv, env());
  ASSERT_TRUE(wait_for_file(file("started")));
  ::kill(std::stoi(read_text_file(file("pid"))), SIGKILL);  // leaves its row behind
  dblock.wait();
  std::this_thread::sleep_for(1200ms);
  nlohmann::json row = listed(key_);
  ASSERT_TRUE(row.is_object());
  EXPECT_EQ(row["expired"], true);
  auto r = run(release({"--owner-host", row["owner_host"], "--owner-process", row["owner_process"],
                        "--owner-thread", row["owner_thread"]}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("expired at"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(forced)"), std::string::npos) << r.out;
  EXPECT_TRUE(listed(key_).is_null());
}

TEST_P(CliReleaseTest, LocksKeyPrefixTakesThePrefixLiterally) {
  const std::vector<std::string> keys{key_ + "%a", key_ + "_b", key_ + "xc"};
  std::vector<std::unique_ptr<ChildProcess>> holders;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string started = file("started" + std::to_string(i));
    holders.push_back(start(cli("run", {"--key", keys[i], "--", "sh", "-c",
                                        "touch '" + started + "'; while [ ! -e '" + file("stop") +
                                            "' ]; do sleep 0.05; done"})));
    ASSERT_TRUE(wait_for_file(started));
  }
  auto keys_listed = [&](const std::string& prefix) {
    auto r = run(cli("locks", {"--json", "--key-prefix", prefix}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    for (const auto& entry : nlohmann::json::parse(r.out)) out.push_back(entry["key"]);
    return out;
  };
  EXPECT_EQ(keys_listed(key_), keys);
  EXPECT_EQ(keys_listed(key_ + "%"), std::vector<std::string>{keys[0]});
  EXPECT_EQ(keys_listed(key_ + "_"), std::vector<std::string>{keys[1]});
  EXPECT_TRUE(keys_listed(key_ + "y").empty());
  auto table = run(cli("locks", {"--key-prefix", key_ + "x"}));
  EXPECT_NE(table.out.find(keys[2]), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find(keys[0]), std::string::npos) << table.out;
  std::ofstream(file("stop")).close();
  for (auto& h : holders) EXPECT_EQ(h->wait().exit_code, 0);
}

// A key is any UTF-8 without NUL, control characters included: the table shows them escaped, so
// a key cannot clear the operator's screen or break the table's lines (the JSON keeps the key).
TEST_P(CliReleaseTest, LocksTableShowsControlCharactersEscaped) {
  const std::string key = key_ + "\x1b[2J\nnext";
  const std::string started = file("started");
  auto holder = start(cli("run", {"--key", key, "--", "sh", "-c",
                                  "touch '" + started + "'; while [ ! -e '" + file("stop") +
                                      "' ]; do sleep 0.05; done"}));
  ASSERT_TRUE(wait_for_file(started));
  auto table = run(cli("locks", {"--key-prefix", key_}));
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(key_ + "\\x1b[2J\\nnext"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos) << "a raw escape reached the terminal";
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 2) << table.out;  // header, row
  auto json = run(cli("locks", {"--json", "--key-prefix", key_}));
  EXPECT_EQ(nlohmann::json::parse(json.out).at(0)["key"], key);
  std::ofstream(file("stop")).close();
  EXPECT_EQ(holder->wait().exit_code, 0);
}

// Issue: `dblock release --force` on a semaphore key said "not held" while `dblock locks` listed
// the permit: a stuck permit could not be freed from the command line.
// `locks --prometheus FILE`: the table's gauges, a held lock, then the same lock expired and not
// yet cleaned, with its age.
TEST_P(CliReleaseTest, LocksPrometheusWritesTheTablesGauges) {
  const std::string metrics = file("locks.prom");
  const auto samples = [&] {
    auto r = run(cli("locks", {"--prometheus", metrics}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "") << "the file instead of the listing";
    return metric_samples(metrics);
  };
  auto holder = start(run_sh("touch '" + file("started") + "'; sleep 30", {"--ttl", "1s"}));
  ASSERT_TRUE(wait_for_file(file("started")));
  auto held = samples();
  EXPECT_EQ(held.at("dblock_locks_held{kind=\"lock\"}"), 1);
  EXPECT_EQ(held.at("dblock_locks_expired{kind=\"lock\"}"), 0);
  EXPECT_EQ(held.at("dblock_locks_oldest_expired_age_seconds{kind=\"lock\"}"), 0);
  holder->signal(SIGKILL);  // its lease runs out unreleased
  holder->wait();
  std::this_thread::sleep_for(2s);
  auto expired = samples();
  EXPECT_EQ(expired.at("dblock_locks_held{kind=\"lock\"}"), 0);
  EXPECT_EQ(expired.at("dblock_locks_expired{kind=\"lock\"}"), 1);
  EXPECT_GT(expired.at("dblock_locks_oldest_expired_age_seconds{kind=\"lock\"}"), 0.5);
  EXPECT_LT(expired.at("dblock_locks_oldest_expired_age_seconds{kind=\"lock\"}"), 30);
}

TEST_P(CliReleaseTest, AStuckPermitIsFreedByNamingIt) {
  auto pool = open_pool(backend().url(), {.max_size = 2});
  SemaphoreOptions options;
  options.tables = TableNames(prefix_);
  Semaphore sem(*pool, 2, options);
  LockOptions stuck;
  stuck.auto_renew = false;
  stuck.ttl = 60s;
  auto first = sem.try_acquire(key_, stuck);
  auto second = sem.try_acquire(key_, stuck);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(sem.try_acquire(key_, stuck));

  // Two held: the permit must be named; without --force a live one is refused.
  expect_one_line_error(run(release({"--force"})), 64, "--permit N", "");
  const std::string slot = std::to_string(first->fencing_token() % 1024 + 1);
  expect_one_line_error(run(release({"--permit", slot, "--owner-host", first->owner().host})), 75,
                        "pass --force", "");
  const ProcessResult forced = run(release({"--force", "--permit", slot}));
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("released permit " + slot + "/2 of semaphore " + key_),
            std::string::npos)
      << forced.out;
  EXPECT_NE(forced.out.find(first->lease_id()), std::string::npos) << forced.out;
  // The slot is free again; the holder finds its permit gone; the other permit is untouched.
  auto next = sem.try_acquire(key_, stuck);
  ASSERT_TRUE(next);
  EXPECT_GT(next->fencing_token(), first->fencing_token());
  EXPECT_EQ(first->release(), ReleaseOutcome::kNotHeld);
  EXPECT_EQ(second->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(next->release(), ReleaseOutcome::kReleased);
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliReleaseTest, ::testing::ValuesIn(all_backends()), BackendName());

TEST(CliVersionTest, PrintsTheVersionAndTheDriversBuiltIn) {
  ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
  auto r = run_process({DBLOCK_CLI_PATH, "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(dblock \d+\.\d+\.\d+ \(drivers: .+\)\n)")))
      << r.out;
  // The version comes from project(VERSION) in CMakeLists.txt, as the headers' does.
  EXPECT_TRUE(r.out.starts_with("dblock " DBLOCK_VERSION_STRING " (")) << r.out;
#ifdef DBLOCK_HAVE_LIBPQ
  EXPECT_NE(r.out.find("drivers: libpq"), std::string::npos) << r.out;
#endif
  // Every driver the database x driver pairs run on (those built in).
  for (const Backend& pair : all_backends()) {
    EXPECT_NE(r.out.find(pair.driver), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace dblock::testing
