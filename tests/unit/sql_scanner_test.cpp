// SPDX-License-Identifier: Apache-2.0
#include "sql_scanner.hpp"

#include <gtest/gtest.h>

#include "drivers/placeholders.hpp"

namespace dblock::detail {
namespace {

TEST(SplitStatements, SplitsAtTopLevelSemicolonsOnly) {
  auto s = split_statements(
      "CREATE TABLE a (x text DEFAULT ';');\n"
      "-- a comment; with a semicolon\n"
      "/* block; comment */ INSERT INTO \"we;ird\" VALUES ($$a;b$$, $t$c;d$t$);\n"
      "  ;  \n-- trailing comment only\n",
      Dialect::kPostgreSQL);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], "CREATE TABLE a (x text DEFAULT ';')");
  EXPECT_EQ(s[1],
            "-- a comment; with a semicolon\n"
            "/* block; comment */ INSERT INTO \"we;ird\" VALUES ($$a;b$$, $t$c;d$t$)");
}

TEST(SplitStatements, MysqlQuotesAndHashComments) {
  auto s =
      split_statements("SELECT 'it\\'s;' ; # hash; comment\nSELECT `a;b` FROM t", Dialect::kMySQL);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], "SELECT 'it\\'s;'");
  EXPECT_EQ(s[1], "# hash; comment\nSELECT `a;b` FROM t");
}

TEST(NamedPlaceholders, RewritesPostgresDollarParams) {
  EXPECT_EQ(to_named_placeholders("SELECT $1::text, '$2', $10 -- $3\n", Dialect::kPostgreSQL),
            "SELECT :p1::text, '$2', :p10 -- $3\n");
}

TEST(NamedPlaceholders, RewritesMysqlQuestionMarksInOrder) {
  EXPECT_EQ(
      to_named_placeholders("UPDATE t SET a = ?, b = '?' WHERE c = ? AND `?` = 1", Dialect::kMySQL),
      "UPDATE t SET a = :p1, b = '?' WHERE c = :p2 AND `?` = 1");
}

// How many parameters a statement takes, for a driver that would otherwise ignore a surplus one:
// MySQL counts ?; PostgreSQL takes the highest $n, however often each appears.
TEST(NamedPlaceholders, CountsTheParametersAStatementTakes) {
  std::size_t n = 99;
  to_named_placeholders("SELECT $2, $1, $2 -- $7\n", Dialect::kPostgreSQL, &n);
  EXPECT_EQ(n, 2u);
  to_named_placeholders("SELECT ?, '?', ? FROM t WHERE `?` = ?", Dialect::kMySQL, &n);
  EXPECT_EQ(n, 3u);
  to_named_placeholders("SELECT 1", Dialect::kPostgreSQL, &n);
  EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace dblock::detail
