// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "dblock/error.hpp"
#include "dblock/table_names.hpp"

namespace dblock {
namespace {

TEST(Identifiers, AcceptsSimpleNames) {
  EXPECT_NO_THROW(validate_identifier("dblock_locks", "t"));
  EXPECT_NO_THROW(validate_identifier("_x9", "t"));
  EXPECT_NO_THROW(validate_identifier(std::string(63, 'a'), "t"));
}

TEST(Identifiers, RejectsEverythingElse) {
  for (const std::string& bad :
       std::vector<std::string>{"", "9lives", "a-b", "a b", "a\"b", "a`b", "x;DROP TABLE y", "é",
                                std::string("a\0b", 3), std::string(64, 'a'), "a.b"}) {
    try {
      validate_identifier(bad, "table prefix");
      FAIL() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("table prefix"), std::string::npos);
    }
  }
}

TEST(Identifiers, QuotesPerDialect) {
  EXPECT_EQ(quote_identifier(Dialect::kPostgreSQL, "Locks"), "\"Locks\"");
  EXPECT_EQ(quote_identifier(Dialect::kMySQL, "locks"), "`locks`");
}

TEST(TableNames, QualifiesWithPrefixAndSchema) {
  TableNames plain;
  EXPECT_EQ(plain.name("locks"), "dblock_locks");
  EXPECT_EQ(plain.qualified(Dialect::kPostgreSQL, "locks"), "\"dblock_locks\"");
  TableNames custom("app_", "infra");
  EXPECT_EQ(custom.qualified(Dialect::kMySQL, "locks"), "`infra`.`app_locks`");
  TableNames none("", "");
  EXPECT_EQ(none.name("locks"), "locks");
}

TEST(TableNames, RejectsBadPrefixSchemaAndTooLongNames) {
  EXPECT_THROW(TableNames("bad-prefix"), Error);
  EXPECT_THROW(TableNames("ok_", "bad schema"), Error);
  TableNames long_prefix(std::string(60, 'p'));
  EXPECT_THROW(long_prefix.name("locks"), Error);
}

}  // namespace
}  // namespace dblock
