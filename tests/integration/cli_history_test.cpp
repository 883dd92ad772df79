// SPDX-License-Identifier: Apache-2.0
// `dblock history` as an operator uses it, on every pair: `enable` and `disable` (given the
// database options before or after the action), the table of a key's ended holds newest first
// with names escaped, JSON lines, --since and --limit, and an empty history, which is no error.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_fixture.hpp"
#include "dblock/history.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

class CliHistoryTest : public CliFixture {
 protected:
  // Takes and releases `key` as `owner` through the library, `times` times.
  void hold_and_release(const std::string& key, const std::string& owner, int times) {
    auto pool = open_pool(backend().url(), {.max_size = 1});
    UniqueKeyLock lock(*pool, {.tables = TableNames(prefix_)});
    LockOptions o;
    o.owner = Owner::named(owner);
    for (int i = 0; i < times; ++i) {
      auto lease = lock.try_acquire(key, o);
      ASSERT_TRUE(lease);
      ASSERT_EQ(lease->release(), ReleaseOutcome::kReleased);
    }
  }
  static std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  }
};

TEST_P(CliHistoryTest, EnableListAndDisable) {
  // The database options after the action, as the man page shows them, and before it.
  std::vector<std::string> enable{DBLOCK_CLI_PATH, "history", "enable", "--prefix", prefix_};
  const ProcessResult enabled = run(enable);
  ASSERT_EQ(enabled.exit_code, 0) << enabled.err;
  EXPECT_NE(enabled.out.find("enabled"), std::string::npos) << enabled.out;
  EXPECT_TRUE(history_enabled(*backend().connect(), TableNames(prefix_)));

  const ProcessResult empty = run(cli("history", {key_}));
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "no holds of " + key_ + " recorded\n");

  const std::string key = key_ + "\x1b[2J\nnext";
  hold_and_release(key, "a\tb", 3);
  const ProcessResult table = run(cli("history", {key}));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 4) << table.out;  // header, 3
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos) << "a raw escape reached the terminal";
  EXPECT_NE(table.out.find("name:a\\tb"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("released"), std::string::npos) << table.out;

  const ProcessResult json = run(cli("history", {key, "--json"}));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto lines = json_lines(json.out);
  ASSERT_EQ(lines.size(), 3u) << json.out;
  EXPECT_EQ(lines[0]["key"], key);
  EXPECT_EQ(lines[0]["owner_thread"], "name:a\tb");
  EXPECT_EQ(lines[0]["ended_how"], "released");
  EXPECT_GT(lines[0]["fencing_token"].get<std::int64_t>(),
            lines[1]["fencing_token"].get<std::int64_t>());  // newest first
  EXPECT_GT(lines[1]["fencing_token"].get<std::int64_t>(),
            lines[2]["fencing_token"].get<std::int64_t>());

  const ProcessResult newest = run(cli("history", {key, "--json", "--limit", "1"}));
  ASSERT_EQ(json_lines(newest.out).size(), 1u) << newest.out;
  EXPECT_EQ(json_lines(newest.out)[0]["fencing_token"], lines[0]["fencing_token"]);
  EXPECT_EQ(json_lines(run(cli("history", {key, "--json", "--since", "1h"})).out).size(), 3u);
  std::this_thread::sleep_for(400ms);
  const ProcessResult none = run(cli("history", {key, "--since", "300ms"}));
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.rfind("no holds of ", 0), 0u) << none.out;

  const ProcessResult disabled = run(cli("history", {"disable"}));
  ASSERT_EQ(disabled.exit_code, 0) << disabled.err;
  EXPECT_FALSE(history_enabled(*backend().connect(), TableNames(prefix_)));
  hold_and_release(key, "a\tb", 1);
  EXPECT_EQ(json_lines(run(cli("history", {key, "--json"})).out).size(), 3u)
      << "recorded while disabled";
}

// A database without migration 0009: reading and enabling say to migrate (78).
TEST_P(CliHistoryTest, WithoutTheTableItSaysToMigrate) {
  const std::string bare = unique_name("none") + "_";
  const ProcessResult r = run({DBLOCK_CLI_PATH, "history", key_, "--prefix", bare});
  EXPECT_EQ(r.exit_code, 78) << r.out << r.err;
  EXPECT_NE(r.err.find("dblock migrate up"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliHistoryTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
