// SPDX-License-Identifier: Apache-2.0
#include <iostream>
#include <random>

#include "bench.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace dblock::bench {

namespace {

std::vector<Scenario>& registry() {
  static std::vector<Scenario> all;
  return all;
}

std::string random_prefix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out = "bench_";
  for (int i = 0; i < 8; ++i) out += kAlphabet[rng() % 36];
  return out + "_";
}

}  // namespace

bool register_scenario(Scenario scenario) {
  registry().push_back(std::move(scenario));
  return true;
}

bool register_scenario(std::string name, int order, std::function<void(BenchContext&)> run) {
  return register_scenario(Scenario{std::move(name), order, std::move(run)});
}

bool register_scenario(std::string name, int order,
                       std::function<nlohmann::json(BenchContext&)> run, std::string what) {
  auto file = [name, run = std::move(run), what = std::move(what)](BenchContext& ctx) {
    ctx.section(name, what, run(ctx));
  };
  return register_scenario(Scenario{std::move(name), order, std::move(file)});
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all = registry();
  std::stable_sort(all.begin(), all.end(),
                   [](const Scenario& a, const Scenario& b) { return a.order < b.order; });
  return all;
}

ScopedTables::ScopedTables(const DatabaseUrl& url)
    : conn_(open_connection(url)), names_(random_prefix()) {
  Migrator(*conn_, names_).up();
}

ScopedTables::~ScopedTables() {
  // Best effort: a benchmark that failed halfway still tries to leave no tables behind. Every
  // table under the prefix goes, whatever later migrations add.
  try {
    const Dialect d = conn_->dialect();
    Result r = conn_->execute(
        d == Dialect::kPostgreSQL
            ? "SELECT table_name AS t, table_type AS kind FROM information_schema.tables"
              " WHERE table_schema = current_schema() AND starts_with(table_name, $1)"
              " ORDER BY 2 DESC"
            : "SELECT table_name AS t, table_type AS kind FROM information_schema.tables"
              " WHERE table_schema = DATABASE() AND LEFT(table_name, CHAR_LENGTH(?)) = ?"
              " ORDER BY 2 DESC",
        d == Dialect::kPostgreSQL ? std::vector<Value>{names_.prefix()}
                                  : std::vector<Value>{names_.prefix(), names_.prefix()});
    for (const auto& row : r.rows()) {
      // The views first (VIEW sorts after BASE TABLE): a table with a view cannot be dropped.
      const bool view = row[1] && *row[1] == "VIEW";
      if (row[0]) {
        conn_->execute(std::string(view ? "DROP VIEW" : "DROP TABLE") + " IF EXISTS " +
                       quote_identifier(d, *row[0]));
      }
    }
    if (d == Dialect::kPostgreSQL) {  // and the token-check function
      Result f = conn_->execute(
          "SELECT p.oid::regprocedure::text AS f FROM pg_proc p WHERE p.pronamespace ="
          " current_schema()::regnamespace AND starts_with(p.proname, $1)",
          {Value(names_.prefix())});
      for (const auto& row : f.rows()) {
        if (row[0]) conn_->execute("DROP FUNCTION IF EXISTS " + *row[0]);
      }
    }
  } catch (const std::exception&) {
  }
}

std::unique_ptr<Pool> BenchContext::pool(int connections) const {
  return open_pool(target_.url, {.max_size = static_cast<std::size_t>(std::max(connections, 1)),
                                 .acquire_timeout = std::chrono::seconds(60)});
}

void BenchContext::progress(const std::string& text) const {
  std::cerr << "bench [" << target_.name << "] " << text << std::endl;
}

}  // namespace dblock::bench
