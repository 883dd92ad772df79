// SPDX-License-Identifier: Apache-2.0
// `dblock locks --watch`'s frames: spans of time as people read them, every lock and permit by
// key with its time held and left by the database clock, the fair queues with their heads, names
// that cannot drive the terminal, and a frame fitted to the terminal's size.
#include "locks_view.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace dblock::cli {
namespace {

LockRow row(std::string key, std::string thread, std::string acquired_at, std::string expires_at,
            bool expired = false) {
  LockRow r;
  r.key = std::move(key);
  r.owner_host = "h";
  r.owner_process = "7";
  r.owner_thread = std::move(thread);
  r.hold_count = 1;
  r.fencing_token = 42;
  r.acquired_at = std::move(acquired_at);
  r.expires_at = std::move(expires_at);
  r.expired = expired;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Columns are two or more spaces apart.
std::vector<std::string> columns_of(const std::string& line) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < line.size()) {
    std::size_t end = line.find("  ", at);
    if (end == std::string::npos) end = line.size();
    out.push_back(line.substr(at, end - at));
    at = line.find_first_not_of(' ', end);
    if (at == std::string::npos) break;
  }
  return out;
}

TEST(LocksView, SpansReadAsPeopleWriteThem) {
  EXPECT_EQ(format_span(0), "0ms");
  EXPECT_EQ(format_span(-3), "0ms");
  EXPECT_EQ(format_span(0.85), "850ms");
  EXPECT_EQ(format_span(12.34), "12.3s");
  EXPECT_EQ(format_span(59.99), "59.9s");
  EXPECT_EQ(format_span(245), "4m05s");
  EXPECT_EQ(format_span(7380), "2h03m");
  EXPECT_EQ(format_span(3 * 86'400 + 4 * 3600 + 59), "3d04h");
}

TEST(LocksView, AFrameListsLocksAndPermitsByKeyWithTheTimeHeldAndLeft) {
  LockTableView view;
  view.now = "2026-11-27T12:00:00.000000Z";
  view.locks = {row("b", "t1", "2026-11-27T11:59:48.000000Z", "2026-11-27T12:00:18.000000Z"),
                row("d", "t2", "2026-11-27T11:00:00.000000Z", "2026-11-27T11:59:30.000000Z", true),
                row("e", "t3", "2026-11-27T10:00:00.000000Z", "never")};
  PermitRow permit;
  permit.lock = row("a", "t4", "2026-11-27T11:59:59.500000Z", "2026-11-27T12:00:10.000000Z");
  permit.slot = 1;
  permit.permits = 3;
  view.permits = {permit};
  view.queues = {{"b", 2, "h2", "9", "w1", "2026-11-27T11:59:55.000000Z"}};

  const auto lines = lines_of(render_frame(view, "HEADER"));
  ASSERT_EQ(lines.size(), 10u) << render_frame(view, "HEADER");
  EXPECT_EQ(lines[0], "HEADER");
  EXPECT_EQ(lines[1], "");
  EXPECT_EQ(columns_of(lines[2]),
            (std::vector<std::string>{"KIND", "KEY", "HOLDER", "TOKEN", "HELD", "EXPIRES IN",
                                      "STATE", "WAITERS"}));
  EXPECT_EQ(columns_of(lines[3]), (std::vector<std::string>{"permit 2/3", "a", "h/7/t4", "42",
                                                            "500ms", "10.0s", "held", "-"}));
  EXPECT_EQ(columns_of(lines[4]),
            (std::vector<std::string>{"lock", "b", "h/7/t1", "42", "12.0s", "18.0s", "held", "2"}));
  EXPECT_EQ(columns_of(lines[5]), (std::vector<std::string>{"lock", "d", "h/7/t2", "42", "-",
                                                            "30.0s ago", "expired", "0"}));
  EXPECT_EQ(columns_of(lines[6]), (std::vector<std::string>{"lock", "e", "h/7/t3", "42", "2h00m",
                                                            "never", "claimed", "0"}));
  EXPECT_EQ(lines[7], "");
  EXPECT_EQ(columns_of(lines[8]),
            (std::vector<std::string>{"QUEUED FOR", "WAITERS", "NEXT IN LINE", "WAITING"}));
  EXPECT_EQ(columns_of(lines[9]), (std::vector<std::string>{"b", "2", "h2/9/w1", "5.0s"}));
}

TEST(LocksView, AnEmptyTableAndAFailedRefreshSaySo) {
  LockTableView view;
  view.now = "2026-11-27T12:00:00.000000Z";
  EXPECT_EQ(render_frame(view, "H"), "H\n\nno locks held\n");
  EXPECT_EQ(render_error_frame("H", "cannot connect", ""),
            "H\n\nerror: cannot connect\nlast refreshed: never; trying again each interval\n");
  EXPECT_NE(render_error_frame("H", "lost", "2026-11-27 12:00:00.000 UTC")
                .find("last refreshed: 2026-11-27 12:00:00.000 UTC (database clock)"),
            std::string::npos);
}

TEST(LocksView, NamesCannotBreakTheLayoutOrDriveTheTerminal) {
  EXPECT_EQ(printable("a\nb\tc\x1b[2J\x7f"), "a\\nb\\tc\\x1b[2J\\x7f");
  EXPECT_EQ(printable("clé"), "clé");
  LockTableView view;
  view.now = "2026-11-27T12:00:00.000000Z";
  view.locks = {row("k\n\x1b]0;owned\x07", "t\r", "2026-11-27T11:59:48.000000Z",
                    "2026-11-27T12:00:18.000000Z")};
  const std::string frame = render_frame(view, "H");
  EXPECT_EQ(frame.find('\x1b'), std::string::npos) << frame;
  EXPECT_EQ(frame.find('\r'), std::string::npos) << frame;
  EXPECT_EQ(lines_of(frame).size(), 4u) << frame;
}

TEST(LocksView, AFrameIsFittedToTheTerminal) {
  // Lines cut by characters, not bytes; each clears the rest of its line.
  EXPECT_EQ(fit_to_terminal("abcdef\nclé de\n", 4, 10), "abcd\x1b[K\nclé \x1b[K");
  // Taller than the terminal: the last row says how many lines were left out.
  EXPECT_EQ(fit_to_terminal("1\n2\n3\n4\n5\n", 80, 3),
            "1\x1b[K\n2\x1b[K\n... 3 more lines: narrow the view with --key-prefix\x1b[K");
  // Unknown size (0): nothing cut.
  EXPECT_EQ(fit_to_terminal("abc\ndef\n", 0, 0), "abc\x1b[K\ndef\x1b[K");
}

TEST(LocksView, TheJsonOfARefreshCarriesTheRowsAsTheListingDoes) {
  LockTableView view;
  view.now = "2026-11-27T12:00:00.000000Z";
  view.locks = {row("b", "t1", "2026-11-27T11:59:48.000000Z", "2026-11-27T12:00:18.000000Z")};
  PermitRow permit;
  permit.lock = row("a", "t4", "2026-11-27T11:59:59.500000Z", "2026-11-27T12:00:10.000000Z");
  permit.slot = 0;
  permit.permits = 2;
  view.permits = {permit};
  view.queues = {{"b", 1, "h2", "9", "w1", "2026-11-27T11:59:55.000000Z"}};
  const nlohmann::json doc = frame_json(view, "postgresql://u:***@h/db", 500, std::string("b"));
  EXPECT_EQ(doc.at("time"), view.now);
  EXPECT_EQ(doc.at("clock"), "database");
  EXPECT_EQ(doc.at("interval_ms"), 500);
  EXPECT_EQ(doc.at("key_prefix"), "b");
  EXPECT_TRUE(doc.at("error").is_null());
  ASSERT_EQ(doc.at("locks").size(), 2u);
  EXPECT_EQ(doc.at("locks")[0], permit_json(permit));
  EXPECT_EQ(doc.at("locks")[1], lock_json(view.locks[0], 1));
  EXPECT_EQ(doc.at("waiter_queues")[0].at("head_thread"), "w1");
  EXPECT_EQ(doc.dump().find('\n'), std::string::npos);

  const nlohmann::json failed = error_json("2026-11-27T12:00:00.000000Z", "down", "u", 500, {});
  EXPECT_EQ(failed.at("clock"), "local");
  EXPECT_EQ(failed.at("error"), "down");
  EXPECT_TRUE(failed.at("key_prefix").is_null());
  EXPECT_FALSE(failed.contains("locks"));
}

TEST(LocksView, TimesAreShortenedToTheSecondOrTheMillisecondAndOtherTextIsLeft) {
  const std::string t = "2026-11-27T12:00:00.123456Z";
  EXPECT_EQ(shortened_time(t, 19), std::optional<std::string>("2026-11-27 12:00:00"));
  EXPECT_EQ(shortened_time(t, 23), std::optional<std::string>("2026-11-27 12:00:00.123"));
  EXPECT_FALSE(shortened_time("never", 19));
  EXPECT_FALSE(shortened_time("2026-11-27 12:00:00.123456", 19)) << "no 'T': not the database's";
  EXPECT_FALSE(shortened_time("2026-11-27T12", 19)) << "too short";
}

}  // namespace
}  // namespace dblock::cli
