// SPDX-License-Identifier: Apache-2.0
#include "dblock/conditional_update.hpp"

#include <array>

#include "caller_tables.hpp"
#include "dblock/error.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

namespace {

// The statement is the same on both databases but for identifier quotes and placeholders:
//   UPDATE <table> SET <col> = <p> | <col> = <col> + <p>, ... WHERE <key> = <p> AND <col> <op> <p>
std::string placeholder(Dialect dialect, std::size_t n) {
  if (dialect != Dialect::kPostgreSQL) return "?";
  // Appended, not "$" + std::to_string(n): GCC 12 reports a false -Wrestrict for the
  // prepend of a short literal in optimised builds.
  std::string out = "$";
  out += std::to_string(n);
  return out;
}

const std::string& checked_op(const std::string& op) {
  static constexpr std::array<std::string_view, 6> kOps = {"=", "<>", "<", "<=", ">", ">="};
  for (auto ok : kOps) {
    if (op == ok) return op;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unsupported comparison '" + op.substr(0, 8) + "': use = <> < <= > or >=");
}

}  // namespace

std::string_view to_string(CasOutcome outcome) noexcept {
  return outcome == CasOutcome::kApplied ? "applied" : "conflict";
}

CasOutcome conditional_update(Connection& conn, const ConditionalUpdate& update) {
  const Dialect d = conn.dialect();
  if (update.set.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "a conditional update needs at least one assignment");
  }
  if (update.key.is_null()) {
    throw Error(ErrorCode::kInvalidArgument, "the key value is NULL; pass the row's primary key");
  }
  std::vector<Value> params;
  std::string sql = "UPDATE " + quote_table_name(d, update.table) + " SET ";
  for (std::size_t i = 0; i < update.set.size(); ++i) {
    const Assignment& a = update.set[i];
    const std::string col = quote_identifier(d, a.column);
    params.push_back(a.operand);
    sql += (i ? ", " : "") + col + " = ";
    sql += a.kind == Assignment::Kind::kAdd ? col + " + " + placeholder(d, params.size())
                                            : placeholder(d, params.size());
  }
  params.push_back(update.key);
  sql += " WHERE " + quote_identifier(d, update.key_column) + " = " + placeholder(d, params.size());
  for (const Condition& c : update.where) {
    const std::string& op = checked_op(c.op);
    params.push_back(c.operand);
    sql += " AND " + quote_identifier(d, c.column) + " " + op + " " + placeholder(d, params.size());
  }
  std::uint64_t n = 0;
  try {
    n = conn.execute(sql, params).affected_rows();
  } catch (const Error& e) {
    detail::rethrow_for_caller_table(e, update.table, "a conditional update");
  }
  if (n > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "the conditional update matched " + std::to_string(n) + " rows of " + update.table +
                    ": key_column '" + update.key_column +
                    "' must be the table's primary key (roll the transaction back to undo it)");
  }
  return n == 1 ? CasOutcome::kApplied : CasOutcome::kConflict;
}

CasOutcome versioned_update(Connection& conn, const VersionedUpdate& update) {
  ConditionalUpdate u{update.table, update.key_column, update.key, update.set, {}};
  u.set.push_back(Assignment::add(update.version_column, 1));
  u.where.push_back(
      {update.version_column, "=", Value(static_cast<long long>(update.expected_version))});
  return conditional_update(conn, u);
}

}  // namespace dblock
