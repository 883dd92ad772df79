#include "sql/statement.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "dblock/error.hpp"
#include "sql/dialect_sql.hpp"

namespace dblock::detail {
namespace {

constexpr const char* kTemplate =
    "UPDATE {{table:locks}} SET lease_id = {{param:id}}"
    " WHERE lock_key = {{param:key}} AND lease_id <> {{param:id}}";

std::vector<std::string> texts(const std::vector<Value>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.to_text().value_or("NULL"));
  return out;
}

TEST(Statement, PostgreSQLNumbersEachNameOnceAndBindsItOnce) {
  Statement s(kTemplate, Dialect::kPostgreSQL, TableNames("app_"));
  EXPECT_EQ(s.sql(),
            "UPDATE \"app_locks\" SET lease_id = $1 WHERE lock_key = $2 AND lease_id <> $1");
  EXPECT_EQ(texts(s.bind({{"key", Value("k")}, {"id", Value("r-1")}})),
            (std::vector<std::string>{"r-1", "k"}));
}

TEST(Statement, MySQLBindsEachUseInTurn) {
  Statement s(kTemplate, Dialect::kMySQL, TableNames("app_"));
  EXPECT_EQ(s.sql(), "UPDATE `app_locks` SET lease_id = ? WHERE lock_key = ? AND lease_id <> ?");
  EXPECT_EQ(texts(s.bind({{"key", Value("k")}, {"id", Value("r-1")}})),
            (std::vector<std::string>{"r-1", "k", "r-1"}));
}

TEST(Statement, ArgumentsTheStatementDoesNotUseAreIgnored) {
  // One argument list serves both dialects: PostgreSQL's release takes a NOTIFY channel too.
  Statement s("SELECT {{param:a}}", Dialect::kMySQL, TableNames());
  EXPECT_EQ(texts(s.bind({{"channel", Value("c")}, {"a", Value(std::int64_t{7})}})),
            (std::vector<std::string>{"7"}));
}

TEST(Statement, AMissingArgumentIsAFailedPreconditionNamingIt) {
  Statement s(kTemplate, Dialect::kPostgreSQL, TableNames());
  try {
    s.bind({{"key", Value("k")}});
    ADD_FAILURE() << "bound without the id";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("'id'"), std::string::npos) << e.what();
  }
}

TEST(Statement, ParametersOnlyInStatements) {
  // Migrations and other templates rendered without a Statement take no parameters.
  EXPECT_THROW(render_sql("SELECT {{param:a}}", Dialect::kMySQL, TableNames()), Error);
  EXPECT_TRUE(Statement("", Dialect::kMySQL, TableNames()).empty());
}

// The unique-key release of both dialects binds from the one argument list UniqueKeyLock gives.
TEST(Statement, TheReleaseStatementsBindFromOneArgumentList) {
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    for (std::string_view templ : {dialect_sql(d).lock_release, dialect_sql(d).lock_release_rest}) {
      Statement s(templ, d, TableNames());
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      EXPECT_NO_THROW(s.bind({{"key", Value("k")},
                              {"host", Value("h")},
                              {"process", Value("p")},
                              {"thread", Value("t")},
                              {"token", Value(std::int64_t{1})},
                              {"channel", Value("c")},
                              {"release_id", Value("r")}}));
    }
  }
}

// The cleaner's statements take the grace in milliseconds on both dialects.
TEST(Statement, TheCleanerStatementsBindTheGraceInMilliseconds) {
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    const DialectSql& sql = dialect_sql(d);
    for (std::string_view templ :
         {sql.clean_delete, sql.clean_count, sql.clean_row_locks_delete, sql.clean_row_locks_count,
          sql.clean_versions_delete, sql.clean_versions_count}) {
      Statement s(templ, d, TableNames());
      const auto values =
          texts(s.bind({{"grace_ms", Value(std::int64_t{1500})}, {"limit", Value(10)}}));
      EXPECT_NE(std::find(values.begin(), values.end(), "1500"), values.end()) << s.sql();
      EXPECT_NE(std::find(values.begin(), values.end(), "10"), values.end()) << s.sql();
    }
  }
}

// The unique-key acquire, renew and claim, the row lock's, the optimistic version statements and
// the operators' statements bind from the one argument list their caller gives, on both dialects,
// and every placeholder the server sees gets a value.
TEST(Statement, TheLockStatementsBindFromTheirCallersArguments) {
  const std::initializer_list<Arg> lease = {{"key", Value("k")},
                                            {"lease_id", Value("l")},
                                            {"claim_id", Value("c")},
                                            {"host", Value("h")},
                                            {"process", Value("p")},
                                            {"thread", Value("t")},
                                            {"ttl_ms", Value(std::int64_t{1000})},
                                            {"metadata", Value()},
                                            {"token", Value(std::int64_t{1})},
                                            {"version", Value(std::int64_t{2})},
                                            {"prefix", Value("k")},
                                            {"channel", Value("ch")},
                                            {"timeout", Value("300ms")}};
  for (Dialect d : {Dialect::kPostgreSQL, Dialect::kMySQL}) {
    const DialectSql& sql = dialect_sql(d);
    for (std::string_view templ :
         {sql.lock_acquire, sql.lock_renew, sql.lock_claim, sql.version_read, sql.version_create,
          sql.version_cas, sql.lock_list_prefix, sql.lock_operator_release, sql.row_lock_exists,
          sql.row_lock_create, sql.row_lock_create_mariadb, sql.row_lock_set_timeout,
          sql.row_lock_try, sql.row_lock_stamp}) {
      if (templ.empty()) continue;  // a step this dialect does not have
      Statement s(templ, d, TableNames());
      EXPECT_EQ(s.sql().find("{{"), std::string::npos) << s.sql();
      const auto values = s.bind(lease);
      EXPECT_FALSE(values.empty()) << s.sql();
      if (d == Dialect::kMySQL) {
        EXPECT_EQ(static_cast<std::size_t>(std::count(s.sql().begin(), s.sql().end(), '?')),
                  values.size())
            << s.sql();
      } else {
        EXPECT_NE(s.sql().find("$" + std::to_string(values.size())), std::string::npos) << s.sql();
        EXPECT_EQ(s.sql().find("$" + std::to_string(values.size() + 1)), std::string::npos)
            << s.sql();
      }
    }
  }
}

}  // namespace
}  // namespace dblock::detail
