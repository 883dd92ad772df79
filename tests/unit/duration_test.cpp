// SPDX-License-Identifier: Apache-2.0
#include "duration.hpp"

#include <gtest/gtest.h>

#include "dblock/error.hpp"

namespace dblock::cli {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ParsesEachUnit) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(parse_duration("5m"), milliseconds(300'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
  EXPECT_EQ(parse_duration("007s"), milliseconds(7'000));
}

TEST(Duration, RejectsAnythingElseNamingTheValueAndTheForms) {
  for (const char* bad :
       {"",      "5x",    "5",    "-1s",    "+1s",           " 5s",   "5s ", "5 s",
        "s",     "5S",    "5sec", "ms",     "5mss",          "0x10s", "1.s", ".5s",
        "1.5ms", "1..5s", "1m30", "1m-30s", "1.0000000001s", "00"}) {
    try {
      parse_duration(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      std::string message = e.what();
      EXPECT_NE(message.find("'" + std::string(bad) + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("500ms, 30s, 5m, 1h"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

// Issue: cron users write 1m30s, 1.5s, 2min and 1d.
TEST(Duration, AcceptsTheFormsPeopleWrite) {
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(parse_duration("0.25s"), milliseconds(250));
  EXPECT_EQ(parse_duration("2min"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("1d"), milliseconds(86'400'000));
  EXPECT_EQ(parse_duration("1.5d"), milliseconds(129'600'000));
  EXPECT_EQ(parse_duration("1s500ms"), milliseconds(1'500));
  EXPECT_EQ(parse_duration("0.001s"), milliseconds(1));
}

TEST(Duration, SaysWhyForNegativeAndOverflowingValues) {
  EXPECT_THROW(
      {
        try {
          parse_duration("-1s");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(parse_duration("9223372036854775807h"), Error);
  EXPECT_THROW(parse_duration("99999999999999999999ms"), Error);
  EXPECT_EQ(parse_duration("9223372036854775807ms"), milliseconds::max());
}

TEST(Duration, FormatsTheShortestExactForm) {
  EXPECT_EQ(format_duration(milliseconds(0)), "0");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(milliseconds(90'000)), "90s");
  EXPECT_EQ(format_duration(milliseconds(300'000)), "5m");
  EXPECT_EQ(format_duration(milliseconds(7'200'000)), "2h");
  for (auto ms : {1, 999, 1000, 61'000, 3'600'000}) {
    EXPECT_EQ(parse_duration(format_duration(milliseconds(ms))), milliseconds(ms));
  }
}

}  // namespace
}  // namespace dblock::cli
