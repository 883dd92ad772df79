// SPDX-License-Identifier: Apache-2.0
// The history of holds: enabling (the triggers), disabling and reading. Purpose and
// thread-safety in dblock/history.hpp; the triggers' SQL is in lib/src/sql/ (HistorySql).
#include "dblock/history.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "dblock/error.hpp"
#include "enum_names.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock {

namespace {

constexpr auto kNames = detail::enum_names<HoldEnd::kCleaned>(
    {"released", "force_released", "expired", "taken_over", "cleaned"});

void require_history_table(Connection& conn, const TableNames& tables) {
  const Dialect d = conn.dialect();
  const detail::Statement exists(detail::server_sql(conn.server()).migrator.table_exists, d,
                                 tables);
  const Result r = conn.execute(
      exists.sql(),
      exists.bind({{"qualified", Value(tables.qualified(d, "history"))},
                   {"schema", tables.schema().empty() ? Value() : Value(tables.schema())},
                   {"table", Value(tables.name("history"))}}));
  if (r.int64_at(0, "present") == 0) {
    throw Error(ErrorCode::kUndefinedTable,
                "table " + tables.qualified(d, "history") +
                    " is missing: the history of holds needs migration 0009; run `dblock "
                    "migrate up`");
  }
}

// The full names of the history's triggers that exist on the lock table.
std::set<std::string> triggers_present(Connection& conn, const TableNames& tables) {
  const Dialect d = conn.dialect();
  const detail::HistorySql& sql = detail::server_sql(conn.server()).history;
  const detail::Statement present(sql.present, d, tables);
  std::vector<detail::Arg> args = {
      {"qualified", Value(tables.qualified(d, "locks"))},
      {"schema", tables.schema().empty() ? Value() : Value(tables.schema())}};
  const char* const slots[] = {"first", "second"};
  for (std::size_t i = 0; i < 2; ++i) {
    args.push_back({slots[i], Value(tables.name(sql.triggers[i]))});
  }
  const Result r = conn.execute(present.sql(), present.bind(args));
  std::set<std::string> out;
  for (std::size_t i = 0; i < r.size(); ++i) out.insert(r.at(i, "name").value_or(""));
  return out;
}

// Runs `steps`: in one transaction where the dialect's DDL is transactional, else one by one,
// skipping a trigger's creation where it exists (`present`).
void run_steps(Connection& conn, const TableNames& tables, const detail::HistorySql& sql,
               std::span<const detail::HistoryStep> steps, const std::set<std::string>& present) {
  const Dialect d = conn.dialect();
  if (!sql.in_one_transaction) {
    for (const detail::HistoryStep& step : steps) {
      if (!step.trigger.empty() && present.contains(tables.name(step.trigger))) continue;
      try {
        conn.execute(detail::render_sql(step.sql, d, tables));
      } catch (const Error&) {
        // Another enable created it meanwhile: what was asked for is there.
        if (step.trigger.empty() ||
            !triggers_present(conn, tables).contains(tables.name(step.trigger))) {
          throw;
        }
      }
    }
    return;
  }
  conn.begin();
  try {
    for (const detail::HistoryStep& step : steps) {
      conn.execute(detail::render_sql(step.sql, d, tables));
    }
    conn.commit();
  } catch (...) {
    conn.rollback();
    throw;
  }
}

void require_no_transaction(const Connection& conn, std::string_view what) {
  if (conn.in_transaction()) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + " must run outside a transaction: it changes the schema");
  }
}

}  // namespace

std::string_view to_string(HoldEnd end) noexcept { return kNames.of(end, "unknown"); }

std::optional<HoldEnd> hold_end_from_string(std::string_view name) noexcept {
  const auto it = std::find(kNames.names.begin(), kNames.names.end(), name);
  if (it == kNames.names.end()) return std::nullopt;
  return static_cast<HoldEnd>(it - kNames.names.begin());
}

void enable_history(Connection& conn, const TableNames& tables) {
  const detail::HistorySql& sql = detail::server_sql(conn.server()).history;
  if (!sql.unavailable.empty())
    throw Error(ErrorCode::kFailedPrecondition, std::string(sql.unavailable));
  require_no_transaction(conn, "enabling the history of holds");
  require_history_table(conn, tables);
  run_steps(conn, tables, sql, sql.enable,
            sql.in_one_transaction ? std::set<std::string>() : triggers_present(conn, tables));
}

void disable_history(Connection& conn, const TableNames& tables) {
  require_no_transaction(conn, "disabling the history of holds");
  const detail::HistorySql& sql = detail::server_sql(conn.server()).history;
  run_steps(conn, tables, sql, sql.disable, {});
}

bool history_enabled(Connection& conn, const TableNames& tables) {
  return triggers_present(conn, tables).size() ==
         detail::server_sql(conn.server()).history.triggers.size();
}

std::vector<HistoryRow> read_history(Connection& conn, const TableNames& tables,
                                     std::string_view key, const HistoryQuery& query) {
  if (query.since && query.since->count() < 0) {
    throw Error(ErrorCode::kInvalidArgument, "the history's `since` must not be negative");
  }
  require_history_table(conn, tables);
  const detail::Statement read(detail::server_sql(conn.server()).history.read, conn.dialect(),
                               tables);
  constexpr std::uint64_t kAll = std::numeric_limits<std::int64_t>::max();
  const Result r = conn.execute(
      read.sql(),
      read.bind({{"key", Value(std::string(key))},
                 {"since_ms", query.since ? Value(query.since->count()) : Value()},
                 {"limit", Value(static_cast<std::int64_t>(
                               query.limit == 0 ? kAll : std::min(query.limit, kAll)))}}));
  std::vector<HistoryRow> out;
  out.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto text = [&](std::string_view col) { return r.at(i, col).value_or(""); };
    const std::string how = text("ended_how");
    const std::optional<HoldEnd> end = hold_end_from_string(how);
    if (!end) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "the history table holds an ending this version does not know: '" + how +
                      "'; upgrade dblock");
    }
    out.push_back(HistoryRow{text("key"), r.int64_at(i, "fencing_token"), text("owner_host"),
                             text("owner_process"), text("owner_thread"), text("acquired_at"),
                             text("ended_at"), *end});
  }
  return out;
}

}  // namespace dblock
