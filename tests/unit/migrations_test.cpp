// SPDX-License-Identifier: Apache-2.0
#include "migrations.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"
#include "sql_scanner.hpp"

namespace dblock {
namespace {

TEST(Migrations, BuiltinSetsAreNumberedFromOneWithoutGaps) {
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    auto ms = builtin_migrations(d);
    ASSERT_FALSE(ms.empty());
    for (std::size_t i = 0; i < ms.size(); ++i) {
      EXPECT_EQ(ms[i].version, static_cast<int>(i + 1)) << ms[i].id();
      EXPECT_EQ(ms[i].checksum().size(), 64u);
    }
    EXPECT_EQ(ms[0].id(), "0001_create_locks");
  }
}

TEST(Migrations, BothDialectsHaveTheSameMigrations) {
  auto pg = builtin_migrations(Dialect::kPostgreSQL);
  auto my = builtin_migrations(Dialect::kMySQL);
  ASSERT_EQ(pg.size(), my.size());
  for (std::size_t i = 0; i < pg.size(); ++i) EXPECT_EQ(pg[i].id(), my[i].id());
}

TEST(Migrations, BuiltinScriptsRenderAndSplit) {
  TableNames names("t_", "s");
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    for (const auto& m : builtin_migrations(d)) {
      std::string sql = detail::render_sql(m.sql, d, names);
      EXPECT_FALSE(detail::split_statements(sql, d).empty()) << m.id();
    }
  }
}

TEST(Migrations, ParsesFileNames) {
  auto m = detail::parse_migration_file("0042_add_things.sql", "SELECT 1");
  EXPECT_EQ(m.version, 42);
  EXPECT_EQ(m.name, "add_things");
  EXPECT_EQ(m.id(), "0042_add_things");
  for (const char* bad : {"42_x.sql", "0001-x.sql", "0001_.sql", "0000_x.sql", "0001_X.sql",
                          "0001_x.txt", "abcd_x.sql"}) {
    EXPECT_THROW(detail::parse_migration_file(bad, ""), Error) << bad;
  }
}

TEST(Migrations, ChecksumChangesWithTheText) {
  Migration a{1, "x", "CREATE TABLE a (x int);"};
  Migration b{1, "x", "CREATE TABLE a (x bigint);"};
  EXPECT_NE(a.checksum(), b.checksum());
  EXPECT_EQ(a.checksum(), Migration(a).checksum());
}

TEST(Migrations, LoadsADirectoryAndRejectsDuplicates) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "dblock_migrations_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "0002_second.sql") << "SELECT 2;";
  std::ofstream(dir / "0001_first.sql") << "SELECT 1;";
  std::ofstream(dir / "README.md") << "ignored";
  auto ms = load_migrations(dir.string());
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].id(), "0001_first");
  EXPECT_EQ(ms[1].sql, "SELECT 2;");
  std::ofstream(dir / "0002_again.sql") << "SELECT 3;";
  EXPECT_THROW(load_migrations(dir.string()), Error);
  EXPECT_THROW(load_migrations((dir / "missing").string()), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dblock
