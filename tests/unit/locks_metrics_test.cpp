// SPDX-License-Identifier: Apache-2.0
// `dblock locks --prometheus`: the gauges made from the lock table's rows, and the label values
// escaped as the text format wants.
#include "locks_metrics.hpp"

#include <gtest/gtest.h>

namespace dblock::cli {
namespace {

LockRow row(std::string key, bool expired, std::string expires_at) {
  LockRow r;
  r.key = std::move(key);
  r.hold_count = 1;
  r.expired = expired;
  r.expires_at = std::move(expires_at);
  return r;
}

TEST(LocksMetrics, CountsHeldAndExpiredRowsByKindAndTheOldestExpiredAge) {
  const double now = *parse_utc("2026-11-27T12:00:00Z");
  const std::vector<LockRow> locks = {
      row("a", false, "2026-11-27T12:00:30.000000Z"), row("b", true, "2026-11-27T11:59:00.500000Z"),
      row("c", true, "2026-11-27T11:50:00.000000Z"), row("claim", false, "never")};
  PermitRow permit;
  permit.lock = row("s", true, "2026-11-27T11:59:50.000000Z");
  const Metrics m = lock_table_metrics(locks, {permit}, {{"a", 3}, {"q\"x", 1}}, now);
  EXPECT_EQ(m.at("dblock_locks_held").series.at("kind=\"lock\""), 2);
  EXPECT_EQ(m.at("dblock_locks_held").series.at("kind=\"permit\""), 0);
  EXPECT_EQ(m.at("dblock_locks_expired").series.at("kind=\"lock\""), 2);
  EXPECT_EQ(m.at("dblock_locks_expired").series.at("kind=\"permit\""), 1);
  EXPECT_DOUBLE_EQ(m.at("dblock_locks_oldest_expired_age_seconds").series.at("kind=\"lock\""), 600);
  EXPECT_DOUBLE_EQ(m.at("dblock_locks_oldest_expired_age_seconds").series.at("kind=\"permit\""),
                   10);
  EXPECT_EQ(m.at("dblock_lock_waiters").series.at("key=\"a\""), 3);
  EXPECT_EQ(m.at("dblock_lock_waiters").series.at("key=\"q\\\"x\""), 1);
  EXPECT_EQ(m.at("dblock_lock_waiters").series.size(), 2u);
}

TEST(LocksMetrics, AnEmptyTableHasEveryGaugeAtZero) {
  const Metrics m = lock_table_metrics({}, {}, {}, 1e9);
  for (const char* name :
       {"dblock_locks_held", "dblock_locks_expired", "dblock_locks_oldest_expired_age_seconds"}) {
    EXPECT_EQ(m.at(name).series.at("kind=\"lock\""), 0) << name;
    EXPECT_EQ(m.at(name).series.at("kind=\"permit\""), 0) << name;
  }
  EXPECT_TRUE(m.at("dblock_lock_waiters").series.empty());
}

TEST(LocksMetrics, ParsesTheTimesListLocksWritesAndNothingElse) {
  EXPECT_DOUBLE_EQ(*parse_utc("1970-01-01T00:01:00.250000Z"), 60.25);
  EXPECT_DOUBLE_EQ(*parse_utc("2000-03-01T00:00:00Z"), 951868800);
  EXPECT_FALSE(parse_utc("never"));
  EXPECT_FALSE(parse_utc(""));
}

TEST(LabelValues, BackslashQuoteAndLineFeedAreEscaped) {
  EXPECT_EQ(escape_label_value("plain key:1"), "plain key:1");
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace dblock::cli
