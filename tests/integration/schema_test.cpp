// SPDX-License-Identifier: Apache-2.0
// schema/<dialect>.sql must describe exactly what the migrations build: apply each to its own
// empty schema (PostgreSQL) or database (MySQL) and compare the catalogs.
#include <fstream>
#include <sstream>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "sql_scanner.hpp"

namespace dblock::testing {
namespace {

class SchemaFileTest : public ::testing::TestWithParam<Backend> {};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path);
  return s.str();
}

std::string dump_catalog(const Backend& b, Connection& conn, const std::string& schema) {
  std::string out;
  for (const auto& q : b.catalog_queries()) {
    auto r = conn.execute(q, {Value(schema)});
    for (const auto& row : r.rows()) {
      for (const auto& cell : row) out += (cell ? *cell : "NULL") + " | ";
      out += "\n";
    }
    out += "--\n";
  }
  return out;
}

TEST_P(SchemaFileTest, MigrationsYieldExactlyTheSchemaFile) {
  const Backend& b = GetParam();
  auto conn = b.connect();
  const std::string from_migrations = unique_name("sm");
  const std::string from_file = unique_name("sf");

  Migrator(*conn, TableNames(std::string(TableNames::kDefaultPrefix), from_migrations)).up();

  auto file_conn = b.connect();
  file_conn->execute(
      std::string(b.dialect == Dialect::kPostgreSQL ? "CREATE SCHEMA " : "CREATE DATABASE ") +
      quote_identifier(b.dialect, from_file));
  b.use_schema(*file_conn, from_file);
  // Appended piece by piece: GCC 12 reports a false -Warray-bounds for the chain of + here.
  std::string path = DBLOCK_SOURCE_DIR;
  path += "/schema/";
  path += to_string(b.dialect);
  path += ".sql";
  for (const auto& stmt : detail::split_statements(read_file(path), b.dialect)) {
    file_conn->execute(stmt);
  }

  std::string migrated = dump_catalog(b, *conn, from_migrations);
  std::string declared = dump_catalog(b, *conn, from_file);
  EXPECT_NE(migrated.find("dblock_locks"), std::string::npos) << migrated;
  EXPECT_NE(migrated.find("expires_at"), std::string::npos) << migrated;
  EXPECT_EQ(migrated, declared) << "schema/" << to_string(b.dialect)
                                << ".sql differs from what the migrations build";

  b.drop_schema(*conn, from_migrations);
  b.drop_schema(*conn, from_file);
}

INSTANTIATE_TEST_SUITE_P(Pairs, SchemaFileTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
