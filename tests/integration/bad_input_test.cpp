// SPDX-License-Identifier: Apache-2.0
// Runs the bad-input table (bad_input.hpp) on every database x driver pair: each row's answer is
// checked, and a snapshot of the database taken before the wrong input must equal the one
// taken after it.
#include "bad_input.hpp"

#include <cstdlib>

#include "dblock/error.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {

const std::vector<BadInputCase>& all_bad_input_cases() {
  static const std::vector<BadInputCase> all = [] {
    std::vector<BadInputCase> out;
    for (auto group : {lock_key_cases, lock_option_cases, lease_cases, table_name_cases,
                       connection_cases, migration_cases, transactional_cases, lock_set_cases,
                       session_cases, semaphore_cases, cli_cases}) {
      for (auto& c : group()) out.push_back(std::move(c));
    }
    return out;
  }();
  return all;
}

namespace {

// Everything a wrong input could have changed, as text: every row of every table in any schema
// whose name starts with the test's prefix (dblock's tables and the caller tables rows create),
// and the list of those tables. The lock row of `skip_key` is left out.
std::vector<std::string> snapshot(const Backend& backend, Connection& conn,
                                  const TableNames& tables, const std::string& skip_key) {
  const bool pg = backend.dialect == Dialect::kPostgreSQL;
  const std::string locks = tables.name("locks");
  std::vector<std::string> out;
  auto add = [&](const std::string& what, const Result& r) {
    for (const auto& row : r.rows()) {
      std::string line = what;
      for (const auto& cell : row) line += "|" + cell.value_or("NULL");
      out.push_back(line);
    }
  };
  const Value prefix(tables.prefix());
  const Result listed = pg ? conn.execute(
                                 "SELECT schemaname, tablename FROM pg_tables"
                                 " WHERE starts_with(tablename, $1) ORDER BY 1, 2",
                                 {prefix})
                           : conn.execute(
                                 "SELECT table_schema, table_name FROM information_schema.tables"
                                 " WHERE LEFT(table_name, CHAR_LENGTH(?)) = ?"
                                 " AND table_type = 'BASE TABLE' ORDER BY 1, 2",
                                 {prefix, prefix});
  add("table", listed);
  for (const auto& row : listed.rows()) {
    const std::string name = *row.at(1);
    const std::string table = quote_table_name(backend.dialect, *row.at(0) + "." + name);
    // PostgreSQL: each row as one text value (SOCI cannot read an 'infinity' timestamp, as a
    // claim's expires_at). Ordered by the whole row: a stable order.
    const std::string rows = pg ? "SELECT t::text FROM " + table + " t" : "SELECT * FROM " + table;
    if (name == locks) {
      add(name, conn.execute(rows + " WHERE lock_key <> " + backend.param(1) + " ORDER BY 1",
                             {Value(skip_key)}));
    } else {
      add(name, conn.execute(rows + " ORDER BY 1"));
    }
  }
  return out;
}

using Param = std::tuple<Backend, std::size_t>;

class BadInputTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    tables_ = TableNames(unique_name("b") + "_");
    conn_ = backend().connect();
    Migrator(*conn_, tables_).up();
    pool_ = open_pool(backend().url(), {.max_size = 2});
    const std::string text = std::getenv(backend().url_env.c_str());  // set: connect() worked
    url_ = text + (text.find('?') == std::string::npos ? "?" : "&") + "driver=" + backend().driver;
  }
  void TearDown() override {
    context_.reset();
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, tables_.prefix());
  }
  const Backend& backend() const { return std::get<0>(GetParam()); }
  const BadInputCase& row() const { return all_bad_input_cases().at(std::get<1>(GetParam())); }

  TableNames tables_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<Pool> pool_;
  std::string url_;
  std::unique_ptr<BadInputContext> context_;
};

TEST_P(BadInputTest, AnswersClearlyAndChangesNothing) {
  const BadInputCase& c = row();
  SCOPED_TRACE("input: " + c.input);
  context_ = std::make_unique<BadInputContext>(
      BadInputContext{backend(), tables_, *conn_, *pool_, url_, backend().url().password});
  BadInputContext& ctx = *context_;
  if (c.setup) c.setup(ctx);
  const auto before = snapshot(backend(), *conn_, tables_, c.touched_key);

  if (c.cli) {
    auto r = c.cli(ctx);
    expect_one_line_error(r, c.exit_code, c.expect, ctx.password);
    if (!c.secret.empty()) {
      EXPECT_EQ(r.err.find(c.secret), std::string::npos) << r.err;
    }
  } else {
    try {
      std::string outcome = c.act(ctx);
      EXPECT_FALSE(c.code.has_value())
          << "expected " << to_string(*c.code) << ", got the outcome '" << outcome << "'";
      EXPECT_EQ(outcome, c.expect);
    } catch (const Error& e) {
      const std::string what = e.what();
      ASSERT_TRUE(c.code.has_value())
          << "expected '" << c.expect << "', got " << to_string(e.code()) << ": " << what;
      EXPECT_EQ(e.code(), *c.code) << to_string(e.code()) << ": " << what;
      EXPECT_NE(what.find(c.expect), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
      EXPECT_EQ(what.find(ctx.password), std::string::npos) << "password leaked: " << what;
      if (!c.secret.empty()) {
        EXPECT_EQ(what.find(c.secret), std::string::npos) << what;
      }
    }
  }

  EXPECT_EQ(snapshot(backend(), *conn_, tables_, c.touched_key), before)
      << "the wrong input changed the database";
}

std::vector<std::size_t> case_indexes() {
  std::vector<std::size_t> out(all_bad_input_cases().size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

struct ParamName {
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    return std::get<0>(info.param).name + "_" +
           all_bad_input_cases().at(std::get<1>(info.param)).name;
  }
};

INSTANTIATE_TEST_SUITE_P(Pairs, BadInputTest,
                         ::testing::Combine(::testing::ValuesIn(all_backends()),
                                            ::testing::ValuesIn(case_indexes())),
                         ParamName());

}  // namespace
}  // namespace dblock::testing
