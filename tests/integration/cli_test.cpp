// SPDX-License-Identifier: Apache-2.0
// `dblock migrate` as a user runs it: exit codes, output, one-line errors with no password, and
// two processes migrating the same database at the same moment.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

class CliTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
    prefix_ = unique_name("c") + "_";
    std::string text =
        std::getenv(backend().url_env.c_str()) ? std::getenv(backend().url_env.c_str()) : "";
    ASSERT_FALSE(text.empty()) << backend().url_env << " is not set; run scripts/test.sh";
    url_ = text + (text.find('?') == std::string::npos ? "?" : "&") + "driver=" + backend().driver;
    password_ = backend().url().password;
  }
  void TearDown() override {
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, prefix_);
  }
  const Backend& backend() const { return GetParam(); }

  // Runs `dblock migrate <args> --prefix <prefix>` with DBLOCK_URL set (unless overridden).
  ProcessResult migrate(std::vector<std::string> args,
                        std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv{DBLOCK_CLI_PATH, "migrate"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--prefix");
    argv.push_back(prefix_);
    env.try_emplace("DBLOCK_URL", url_);
    return run_process(argv, env);
  }

  void expect_one_line_error(const ProcessResult& r, int code, const std::string& fragment) {
    testing::expect_one_line_error(r, code, fragment, password_);
  }

  std::string prefix_;
  std::string url_;
  std::string password_;
};

TEST_P(CliTest, StatusUpUpVerify) {
  auto status = migrate({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("0001_create_locks"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("pending"), std::string::npos) << status.out;

  auto up = migrate({"up"});
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_NE(up.out.find("applied 0001_create_locks"), std::string::npos) << up.out;

  auto again = migrate({"up"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("up to date"), std::string::npos) << again.out;

  auto after = migrate({"status"});
  EXPECT_EQ(after.out.find("pending"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("applied"), std::string::npos) << after.out;

  auto verify = migrate({"verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
}

TEST_P(CliTest, VerifyNamesAnEditedMigration) {
  ASSERT_EQ(migrate({"up"}).exit_code, 0);
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / unique_name("migs");
  fs::create_directories(dir);
  for (const auto& m : builtin_migrations(backend().dialect)) {
    std::ofstream(dir / (m.id() + ".sql")) << m.sql;
  }
  EXPECT_EQ(migrate({"verify", "--migrations-dir", dir.string()}).exit_code, 0);
  std::ofstream(dir / "0001_create_locks.sql", std::ios::app) << "\n-- edited after release\n";
  auto r = migrate({"verify", "--migrations-dir", dir.string()});
  expect_one_line_error(r, 78, "0001_create_locks");
  auto up = migrate({"up", "--migrations-dir", dir.string()});
  expect_one_line_error(up, 78, "0001_create_locks");
  fs::remove_all(dir);
}

TEST_P(CliTest, MissingTableSaysToRunUp) {
  expect_one_line_error(migrate({"verify"}), 78, "run `dblock migrate up`");
}

TEST_P(CliTest, WrongPasswordIsAccessDenied) {
  std::string wrong = "NotThePassword" + unique_name("x");
  std::string bad = with_password(url_, wrong);
  auto r = migrate({"status"}, {{"DBLOCK_URL", bad}});
  expect_one_line_error(r, 77, "password");
  EXPECT_EQ(r.err.find(wrong), std::string::npos) << r.err;
}

TEST_P(CliTest, UnreachableServerIsUnavailable) {
  auto url = backend().url();
  std::string scheme = url.dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql";
  // Port 1 on loopback: nothing listens there.
  auto r = migrate({"status"}, {{"DBLOCK_URL", scheme + "://u:" + password_ +
                                                   "@127.0.0.1:1/db?driver=" + backend().driver}});
  expect_one_line_error(r, 69, "server is running");
}

TEST_P(CliTest, TwoProcessesMigratingAtOnceBothSucceed) {
  for (int round = 0; round < 3; ++round) {
    prefix_ = unique_name("c") + "_";
    ChildProcess a({DBLOCK_CLI_PATH, "migrate", "up", "--prefix", prefix_}, {{"DBLOCK_URL", url_}});
    ChildProcess b({DBLOCK_CLI_PATH, "migrate", "up", "--prefix", prefix_}, {{"DBLOCK_URL", url_}});
    auto ra = a.wait();
    auto rb = b.wait();
    EXPECT_EQ(ra.exit_code, 0) << ra.err;
    EXPECT_EQ(rb.exit_code, 0) << rb.err;
    auto conn = backend().connect();
    auto n = conn->execute("SELECT COUNT(*) FROM " +
                           TableNames(prefix_).qualified(backend().dialect, "schema_migrations"))
                 .int64_at(0, 0);
    EXPECT_EQ(n, static_cast<std::int64_t>(builtin_migrations(backend().dialect).size()));
    // Exactly one of them applied each migration; the other found nothing to do.
    int applied_lines = 0;
    for (const auto* out : {&ra.out, &rb.out}) {
      for (std::size_t pos = out->find("applied "); pos != std::string::npos;
           pos = out->find("applied ", pos + 1)) {
        ++applied_lines;
      }
    }
    EXPECT_EQ(applied_lines, n);
    backend().drop_tables_with_prefix(*conn, prefix_);
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
