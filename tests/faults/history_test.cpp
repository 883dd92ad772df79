// SPDX-License-Identifier: Apache-2.0
// The mutual-exclusion checker itself (scenario 10), on histories written here: it must find
// the overlaps, token inversions and reused global tokens planted in them, and nothing in a
// clean history.
#include "history.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "backends.hpp"

namespace dblock::testing {
namespace {

class HistoryCheckerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / (unique_name("history") + ".txt")).string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(HistoryCheckerTest, ACleanHistoryHasNoViolations) {
  {
    HistoryWriter h(path_);
    h.acquired("a", "k", 10, 1'000, 900, 1000);  // valid until 900 + 1,000,000 us
    h.released("a", "k", 10, 5'000, "released");
    h.acquired("b", "k", 11, 6'000, 5'500, 1000);
    h.renewed("b", "k", 11, 300'000, 1000);
    h.acquired("c", "other", 3, 2'000, 1'500, 1000);  // another key may overlap
  }
  auto holds = load_holds({path_});
  ASSERT_EQ(holds.size(), 3u);
  auto report = check_mutual_exclusion(holds);
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_EQ(report.keys, 2u);
}

TEST_F(HistoryCheckerTest, FindsOverlapsAndTokenInversions) {
  {
    HistoryWriter h(path_);
    // a is never released: it holds until 1,000 + 1 s. b acquires within that second.
    h.acquired("a", "k", 10, 1'100, 1'000, 1000);
    h.acquired("b", "k", 11, 500'000, 499'000, 1000);
    h.released("b", "k", 11, 600'000, "released");
    // c comes after both but with a smaller token.
    h.acquired("c", "k", 9, 2'000'000, 1'999'000, 1000);
  }
  auto report = check_mutual_exclusion(load_holds({path_}));
  EXPECT_EQ(report.overlaps.size(), 1u) << report.summary();
  EXPECT_EQ(report.token_inversions.size(), 1u) << report.summary();
  EXPECT_FALSE(report.clean());
}

TEST_F(HistoryCheckerTest, ARenewalExtendsAHoldAndALateReleaseDoesNot) {
  {
    HistoryWriter h(path_);
    h.acquired("a", "k", 10, 1'100, 1'000, 1000);
    h.renewed("a", "k", 10, 800'000, 1000);                // valid until 1,800,000
    h.released("a", "k", 10, 5'000'000, "not_held");       // too late to matter
    h.acquired("b", "k", 11, 1'700'000, 1'650'000, 1000);  // inside a's renewed lease
  }
  auto holds = load_holds({path_});
  ASSERT_EQ(holds.size(), 2u);
  auto report = check_mutual_exclusion(holds);
  EXPECT_EQ(report.overlaps.size(), 1u) << report.summary();
}

// Tokens of one sequence over every key (session locks): a token seen under two keys is
// reported only when the strategy promises global tokens; per key both histories are clean.
TEST_F(HistoryCheckerTest, FindsATokenReusedUnderAnotherKeyWhenTokensAreGlobal) {
  {
    HistoryWriter h(path_);
    h.acquired("a", "k1", 10, 1'100, 1'000, 0);
    h.released("a", "k1", 10, 2'000, "released");
    h.acquired("b", "k2", 10, 3'000, 2'500, 0);
    h.released("b", "k2", 10, 4'000, "released");
    h.acquired("c", "k2", 12, 5'000, 4'500, 0);
  }
  auto holds = load_holds({path_}, /*leases_expire=*/false);
  EXPECT_TRUE(check_mutual_exclusion(holds).clean());
  auto report = check_mutual_exclusion(holds, /*global_tokens=*/true);
  EXPECT_EQ(report.repeated_tokens.size(), 1u) << report.summary();
  EXPECT_TRUE(report.overlaps.empty() && report.token_inversions.empty()) << report.summary();
  EXPECT_FALSE(report.clean());
}

TEST_F(HistoryCheckerTest, RejectsMalformedLines) {
  {
    std::ofstream out(path_);
    out << "acquired a k notanumber\n";
  }
  EXPECT_THROW(load_holds({path_}), std::runtime_error);
}

}  // namespace
}  // namespace dblock::testing
