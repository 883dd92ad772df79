// SPDX-License-Identifier: Apache-2.0
// `dblock clean` as cron and an operator run it: silent success, the -v line, the JSON object,
// dry runs, one-line errors with the right exit codes, the Prometheus file, and --loop stopping
// cleanly on SIGTERM.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "lock_rows.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class CliCleanTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
    tables_ = TableNames(unique_name("k") + "_");
    std::string text =
        std::getenv(backend().url_env.c_str()) ? std::getenv(backend().url_env.c_str()) : "";
    ASSERT_FALSE(text.empty()) << backend().url_env << " is not set; run scripts/test.sh";
    url_ = text + (text.find('?') == std::string::npos ? "?" : "&") + "driver=" + backend().driver;
    password_ = backend().url().password;
    conn_ = backend().connect();
    Migrator(*conn_, tables_).up();
    dir_ = fs::temp_directory_path() / unique_name("cli-clean");
    fs::create_directories(dir_);
  }
  void TearDown() override {
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, tables_.prefix());
    fs::remove_all(dir_);
  }
  const Backend& backend() const { return GetParam(); }

  std::vector<std::string> argv(const std::vector<std::string>& args) const {
    std::vector<std::string> out{DBLOCK_CLI_PATH, "clean", "--prefix", tables_.prefix()};
    out.insert(out.end(), args.begin(), args.end());
    return out;
  }
  // Runs `dblock clean --prefix <prefix> <args>` with DBLOCK_URL set (unless overridden).
  ProcessResult clean(const std::vector<std::string>& args,
                      std::map<std::string, std::string> env = {}) const {
    env.try_emplace("DBLOCK_URL", url_);
    return run_process(argv(args), env);
  }
  void expired(std::uint64_t n) { insert_lock_rows(*conn_, tables_, unique_name("x"), n, -3600); }
  std::uint64_t rows() { return count_lock_rows(*conn_, tables_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  void expect_one_line_error(const ProcessResult& r, int code, const std::string& fragment) {
    testing::expect_one_line_error(r, code, fragment, password_);
  }

  TableNames tables_;
  std::string url_;
  std::string password_;
  std::unique_ptr<Connection> conn_;
  fs::path dir_;
};

TEST_P(CliCleanTest, SilentOnSuccess) {
  expired(12);
  insert_lock_rows(*conn_, tables_, "live", 2, 3600);
  auto r = clean({"--batch", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(rows(), 2u);
}

TEST_P(CliCleanTest, UrlFromAFile) {
  expired(3);
  std::ofstream(file("url")) << url_ << "\n";
  auto r = clean({"--url-file", file("url")}, {{"DBLOCK_URL", ""}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(rows(), 0u);
}

TEST_P(CliCleanTest, VerbosePrintsOneSummaryLine) {
  expired(12);
  auto r = clean({"-v", "--batch", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("dblock clean: deleted 12 rows (history 0, lock_waiters 0, locks 12, "
                        "row_locks 0, semaphore_permits 0, semaphores 0, versions 0) in 9 "
                        "batches, ",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  EXPECT_NE(r.out.find("oldest expiry left: none"), std::string::npos) << r.out;
}

TEST_P(CliCleanTest, JsonSummary) {
  expired(7);
  insert_lock_rows(*conn_, tables_, "recent", 1, -10);  // inside the default grace
  auto r = clean({"--json", "--batch", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deleted"], 7);
  EXPECT_EQ(j["tables"]["locks"], 7);
  EXPECT_EQ(j["batches"], 9);  // 3 for the locks, 1 each for the other (empty) tables
  EXPECT_TRUE(j["duration_ms"].is_number_integer());
  EXPECT_TRUE(j["oldest_expiry_left"].is_string()) << r.out;
  EXPECT_EQ(j["dry_run"], false);
  EXPECT_EQ(j["complete"], true);

  auto empty = clean({"--json", "--grace", "0"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  auto e = nlohmann::json::parse(empty.out);
  EXPECT_EQ(e["deleted"], 1);
  EXPECT_TRUE(e["oldest_expiry_left"].is_null()) << empty.out;
}

TEST_P(CliCleanTest, TwoCleanerProcessesAtOnceShareTheWork) {
  expired(3000);
  insert_lock_rows(*conn_, tables_, "live", 5, 3600);
  std::map<std::string, std::string> env{{"DBLOCK_URL", url_}};
  ChildProcess a(argv({"--json", "--batch", "100"}), env);
  ChildProcess b(argv({"--json", "--batch", "100"}), env);
  auto ra = a.wait();
  auto rb = b.wait();
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  auto deleted_a = nlohmann::json::parse(ra.out)["deleted"].get<std::uint64_t>();
  auto deleted_b = nlohmann::json::parse(rb.out)["deleted"].get<std::uint64_t>();
  EXPECT_EQ(deleted_a + deleted_b, 3000u);  // no row counted twice, none missed
  EXPECT_EQ(rows(), 5u);
}

TEST_P(CliCleanTest, DryRunDeletesNothing) {
  expired(9);
  auto r = clean({"--json", "--dry-run", "--max-rows", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deleted"], 4);
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["batches"], 0);
  auto v = clean({"-v", "--dry-run"});
  EXPECT_EQ(v.out.rfind("dblock clean: would delete 9 rows", 0), 0u) << v.out;
  EXPECT_EQ(rows(), 9u);
}

TEST_P(CliCleanTest, MissingTableSaysToMigrate) {
  auto r = run_process({DBLOCK_CLI_PATH, "clean", "--prefix", unique_name("none") + "_"},
                       {{"DBLOCK_URL", url_}});
  expect_one_line_error(r, 78, "run `dblock migrate up`");
}

TEST_P(CliCleanTest, WrongPasswordIsAccessDenied) {
  std::string wrong = "NotThePassword" + unique_name("x");
  std::string bad = with_password(url_, wrong);
  auto r = clean({}, {{"DBLOCK_URL", bad}});
  expect_one_line_error(r, 77, "password");
  EXPECT_EQ(r.err.find(wrong), std::string::npos) << r.err;
}

TEST_P(CliCleanTest, UnreachableServerIsUnavailable) {
  std::string scheme = backend().dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql";
  auto r = clean({}, {{"DBLOCK_URL", scheme + "://u:" + password_ +
                                         "@127.0.0.1:1/db?driver=" + backend().driver}});
  expect_one_line_error(r, 69, "server is running");
}

TEST_P(CliCleanTest, PrometheusFileCountsAcrossRuns) {
  const std::string prom = file("dblock.prom");
  expired(5);
  auto first = clean({"--prometheus", prom});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string text = read_text_file(prom);
  EXPECT_NE(text.find("# TYPE dblock_clean_deleted_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_deleted_total{table=\"locks\"} 5\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dblock_clean_runs_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_last_run_success 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_last_run_seconds "), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_last_success_timestamp_seconds "), std::string::npos) << text;

  expired(3);
  ASSERT_EQ(clean({"--prometheus", prom}).exit_code, 0);
  text = read_text_file(prom);
  EXPECT_NE(text.find("dblock_clean_deleted_total{table=\"locks\"} 8\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dblock_clean_runs_total 2\n"), std::string::npos) << text;

  // A failed run counts as one and keeps the last success time.
  auto failed = clean({"--prometheus", prom}, {{"DBLOCK_URL", "mysql://u@127.0.0.1:1/db"}});
  EXPECT_EQ(failed.exit_code, 69) << failed.err;
  text = read_text_file(prom);
  EXPECT_NE(text.find("dblock_clean_failures_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_last_run_success 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dblock_clean_deleted_total{table=\"locks\"} 8\n"), std::string::npos)
      << text;
  // Only the metrics file is left: the temporary file was renamed over it.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_P(CliCleanTest, LoopRunsUntilSigtermAndExitsZero) {
  expired(4);
  ChildProcess loop(argv({"--loop", "--interval", "200ms", "--json"}), {{"DBLOCK_URL", url_}});
  ASSERT_TRUE(loop.wait_for_output("\"deleted\":4", 10s)) << loop.output_so_far();
  expired(2);  // the next runs take these
  ASSERT_TRUE(loop.wait_for_output("\"deleted\":2", 10s)) << loop.output_so_far();
  loop.signal(SIGTERM);
  auto r = loop.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(rows(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliCleanTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
