// SPDX-License-Identifier: Apache-2.0
// The history of holds' pieces that need no database (lib/src/history.cpp and its SQL): the
// endings' names, and the triggers' and reads' statements, rendered and bound on every server.
#include "dblock/history.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock {
namespace {

constexpr Server kServers[] = {Server::kPostgreSQL, Server::kMySQL, Server::kMariaDB};

TEST(History, EndingsReadBackFromTheirNames) {
  for (HoldEnd end : {HoldEnd::kReleased, HoldEnd::kForceReleased, HoldEnd::kExpired,
                      HoldEnd::kTakenOver, HoldEnd::kCleaned}) {
    EXPECT_EQ(hold_end_from_string(to_string(end)), end) << to_string(end);
    // The history table's column holds at most 16 characters.
    EXPECT_LE(to_string(end).size(), 16u);
  }
  EXPECT_EQ(to_string(HoldEnd::kForceReleased), "force_released");
  EXPECT_EQ(to_string(HoldEnd::kTakenOver), "taken_over");
  for (const char* other : {"", "Released", "released ", "taken over", "unknown"}) {
    EXPECT_FALSE(hold_end_from_string(other)) << other;
  }
}

// Every quoted word in the triggers is an ending this version reads back, or one of the two
// other literals they compare with (the operator's mark, PostgreSQL's TG_OP); and every ending
// is written somewhere.
TEST(History, TheTriggersWriteOnlyEndingsThisVersionReads) {
  for (Server server : kServers) {
    const detail::HistorySql& sql = detail::server_sql(server).history;
    if (!sql.unavailable.empty()) {  // MySQL, MariaDB: enable refuses, and creates nothing
      EXPECT_TRUE(sql.enable.empty()) << to_string(server);
      continue;
    }
    std::string written;
    for (const detail::HistoryStep& step : sql.enable) written += step.sql;
    std::size_t literals = 0;
    for (std::size_t open = written.find('\''); open != std::string::npos;
         open = written.find('\'', open)) {
      const std::size_t close = written.find('\'', open + 1);
      ASSERT_NE(close, std::string::npos) << written;
      const std::string literal = written.substr(open + 1, close - open - 1);
      open = close + 1;
      ++literals;
      if (literal == "f-" || literal == "DELETE") continue;
      EXPECT_TRUE(hold_end_from_string(literal)) << to_string(server) << ": '" << literal << "'";
    }
    EXPECT_GE(literals, 5u);
    for (const char* end :
         {"'released'", "'force_released'", "'expired'", "'taken_over'", "'cleaned'"}) {
      EXPECT_NE(written.find(end), std::string::npos) << to_string(server) << ": " << end;
    }
  }
}

TEST(History, StatementsRenderForAPrefixAndASchemaAndBindTheirArguments) {
  const TableNames names("app_", "ops");
  for (Server server : kServers) {
    const Dialect d = dialect_of(server);
    const detail::HistorySql& sql = detail::server_sql(server).history;
    ASSERT_EQ(sql.triggers.size(), 2u);
    for (auto steps : {sql.enable, sql.disable}) {
      for (const detail::HistoryStep& step : steps) {
        const std::string rendered = detail::render_sql(step.sql, d, names);
        EXPECT_EQ(rendered.find("{{"), std::string::npos) << rendered;
        EXPECT_NE(rendered.find("app_"), std::string::npos) << rendered;
        if (!step.trigger.empty()) {
          EXPECT_NE(std::find(sql.triggers.begin(), sql.triggers.end(), step.trigger),
                    sql.triggers.end())
              << step.trigger;
        }
      }
    }
    const detail::Statement read(sql.read, d, names);
    const auto values =
        read.bind({{"key", Value("k")}, {"since_ms", Value()}, {"limit", Value(5)}});
    EXPECT_FALSE(values.empty());
    EXPECT_NE(read.sql().find(names.qualified(d, "history")), std::string::npos) << read.sql();
    const detail::Statement present(sql.present, d, names);
    EXPECT_FALSE(present
                     .bind({{"qualified", Value("q")},
                            {"schema", Value("ops")},
                            {"first", Value("a")},
                            {"second", Value("b")}})
                     .empty());
  }
}

}  // namespace
}  // namespace dblock
