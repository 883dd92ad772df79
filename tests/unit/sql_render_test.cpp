#include <gtest/gtest.h>

#include "dblock/error.hpp"
#include "sql/dialect_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::detail {
namespace {

TEST(RenderSql, ExpandsTableNameAndSchemaPlaceholders) {
  TableNames names("app_", "infra");
  EXPECT_EQ(render_sql("CREATE INDEX {{name:locks_idx}} ON {{table:locks}} (x)",
                       Dialect::kPostgreSQL, names),
            "CREATE INDEX \"app_locks_idx\" ON \"infra\".\"app_locks\" (x)");
  EXPECT_EQ(render_sql("CREATE DATABASE IF NOT EXISTS {{schema}}", Dialect::kMySQL, names),
            "CREATE DATABASE IF NOT EXISTS `infra`");
}

TEST(RenderSql, KeepsRelaxedSectionsOnlyForRelaxedDurability) {
  TableNames names("app_");
  const char* templ = "UPDATE {{table:locks}} SET x = 1 WHERE {{relaxed:f() AND}} k = $1";
  EXPECT_EQ(render_sql(templ, Dialect::kPostgreSQL, names),
            "UPDATE \"app_locks\" SET x = 1 WHERE  k = $1");
  EXPECT_EQ(render_sql(templ, Dialect::kPostgreSQL, names, true),
            "UPDATE \"app_locks\" SET x = 1 WHERE f() AND k = $1");
}

TEST(RenderSql, RejectsUnknownOrBrokenPlaceholders) {
  TableNames names;
  EXPECT_THROW(render_sql("SELECT {{oops}}", Dialect::kMySQL, names), Error);
  EXPECT_THROW(render_sql("SELECT {{table:x", Dialect::kMySQL, names), Error);
  EXPECT_THROW(render_sql("{{schema}}", Dialect::kMySQL, names), Error);  // no schema set
  EXPECT_THROW(render_sql("{{table:bad-name}}", Dialect::kMySQL, names), Error);
}

TEST(DialectSql, EveryTemplateRendersForBothDialects) {
  TableNames names("p_", "s");
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    const DialectSql& sql = dialect_sql(d);
    for (std::string_view t :
         {sql.create_schema, sql.create_migrations_table, sql.select_migrations}) {
      std::string out = render_sql(t, d, names);
      EXPECT_EQ(out.find("{{"), std::string::npos) << out;
    }
    // The migrator's statements with parameters bind from the Migrator's argument lists.
    for (std::string_view t : {sql.migrator_lock, sql.migrator_unlock, sql.migrations_table_exists,
                               sql.insert_migration}) {
      if (t.empty()) continue;  // PostgreSQL's lock ends at COMMIT: no unlock
      Statement s(t, d, names);
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      EXPECT_NO_THROW(s.bind({{"lock", Value("1")},
                              {"timeout_s", Value(10)},
                              {"qualified", Value("q")},
                              {"schema", Value()},
                              {"table", Value("t")},
                              {"version", Value(1)},
                              {"name", Value("n")},
                              {"checksum", Value("c")}}));
    }
  }
}

}  // namespace
}  // namespace dblock::detail
