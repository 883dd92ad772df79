// SPDX-License-Identifier: Apache-2.0
// The concurrent examples, run as a user runs them, against every database x driver pair:
// flash_sale must sell exactly the stock with each lock strategy, transfer must let exactly
// one of a thousand requests through, and accounts must move money between pairs of accounts
// locked together without losing any.
#include <cctype>
#include <cstdlib>
#include <vector>

#include "backends.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

class ExamplesTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_STRNE(DBLOCK_FLASH_SALE_PATH, "") << "the examples were not built";
    url_ = std::getenv(backend().url_env.c_str()) ? std::getenv(backend().url_env.c_str()) : "";
    ASSERT_FALSE(url_.empty()) << backend().url_env << " is not set";
    url_ += (url_.find('?') == std::string::npos ? "?" : "&") + std::string("driver=") +
            backend().driver;
  }
  const Backend& backend() const { return GetParam(); }

  // Runs the example at `path` on the pair's URL (with `quick` added under DBLOCK_TEST_QUICK,
  // where every process runs several times slower) and checks that it exits 0 saying `ok`.
  ProcessResult run_example(const char* path, const std::vector<std::string>& quick,
                            const std::string& ok) {
    std::vector<std::string> argv{path, "--url", url_};
    if (std::getenv("DBLOCK_TEST_QUICK") != nullptr) {
      argv.insert(argv.end(), quick.begin(), quick.end());
    }
    auto r = run_process(argv);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(ok), std::string::npos) << r.out << r.err;
    return r;
  }

  std::string url_;
};

TEST_P(ExamplesTest, FlashSaleSellsTheStockExactlyOnceWithEveryStrategy) {
  std::vector<std::string> argv{DBLOCK_FLASH_SALE_PATH, "--url", url_};
  if (std::getenv("DBLOCK_TEST_QUICK") != nullptr) {
    // Under the sanitizers every process starts and runs several times slower: the same sale
    // from 2 processes x 4 threads.
    argv.insert(argv.end(), {"--processes", "2", "--threads", "4"});
  }
  auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const std::string strategy : {"unique-key", "row-lock", "optimistic"}) {
    // One line per strategy: "strategy=<s> sold=100 oversold=0 duplicates=0 seconds=<n>".
    const std::string line = "strategy=" + strategy + " sold=100 oversold=0 duplicates=0 seconds=";
    const auto at = r.out.find(line);
    const bool found = at != std::string::npos && (at == 0 || r.out[at - 1] == '\n') &&
                       std::isdigit(static_cast<unsigned char>(r.out[at + line.size()]));
    EXPECT_TRUE(found) << strategy << ":\n" << r.out << r.err;
  }
  std::printf("%s", r.out.c_str());
}

TEST_P(ExamplesTest, TransferLetsExactlyOneRequestThrough) {
  run_example(DBLOCK_TRANSFER_PATH, {}, "OK: exactly one transfer succeeded");
}

TEST_P(ExamplesTest, AccountsMovesMoneyUnderBothAccountsLocksAndLosesNone) {
  ASSERT_STRNE(DBLOCK_ACCOUNTS_PATH, "") << "the accounts example was not built";
  auto r = run_example(DBLOCK_ACCOUNTS_PATH, {"--processes", "2", "--threads", "4"},
                       "OK: every transfer held both accounts; no money lost");
  EXPECT_NE(r.out.find(" 0 timed out, 0 fenced, 0 failed;"), std::string::npos) << r.out;
  std::printf("%s", r.out.c_str());
}

TEST_P(ExamplesTest, JobRunnerNeverRunsMoreJobsAtOnceThanItsPermits) {
  ASSERT_STRNE(DBLOCK_JOB_RUNNER_PATH, "") << "the job_runner example was not built";
  auto r = run_example(DBLOCK_JOB_RUNNER_PATH,
                       {"--processes", "2", "--threads", "4", "--requests", "60"},
                       "OK: every job ran once, never more than 3 at a time");
  EXPECT_NE(r.out.find("at most 3 ran at one moment"), std::string::npos) << r.out;
  std::printf("%s", r.out.c_str());
}

INSTANTIATE_TEST_SUITE_P(Pairs, ExamplesTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
