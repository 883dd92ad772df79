// SPDX-License-Identifier: Apache-2.0
#include "dblock/lock_table.hpp"

#include <optional>
#include <utility>

#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock {

namespace {

std::vector<LockRow> to_rows(const Result& r) {
  std::vector<LockRow> out;
  out.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto text = [&](std::string_view col) { return r.at(i, col).value_or(""); };
    out.push_back(LockRow{text("key"), text("lease_id"), text("owner_host"), text("owner_process"),
                          text("owner_thread"), r.int64_at(i, "hold_count"),
                          r.int64_at(i, "fencing_token"), text("acquired_at"), text("expires_at"),
                          r.int64_at(i, "expired") != 0, text("metadata")});
  }
  return out;
}

}  // namespace

std::vector<LockRow> list_locks(Connection& conn, const TableNames& tables) {
  const Dialect d = conn.dialect();
  return to_rows(conn.execute(
      detail::render_sql(detail::server_sql(conn.server()).operators.list, d, tables)));
}

std::vector<LockRow> list_locks(Connection& conn, const TableNames& tables,
                                std::string_view key_prefix) {
  const Dialect d = conn.dialect();
  const detail::Statement list(detail::server_sql(conn.server()).operators.list_prefix, d, tables);
  return to_rows(conn.execute(list.sql(), list.bind({{"prefix", Value(std::string(key_prefix))}})));
}

std::optional<LockRow> find_lock(Connection& conn, const TableNames& tables, std::string_view key) {
  const detail::Statement row(detail::server_sql(conn.server()).operators.row, conn.dialect(),
                              tables);
  std::vector<LockRow> rows =
      to_rows(conn.execute(row.sql(), row.bind({{"key", Value(std::string(key))}})));
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::map<std::string, std::int64_t> queued_waiters(Connection& conn, const TableNames& tables) {
  const Result r = conn.execute(detail::render_sql(
      detail::server_sql(conn.server()).operators.waiters, conn.dialect(), tables));
  std::map<std::string, std::int64_t> out;
  for (std::size_t i = 0; i < r.size(); ++i) out[r.at(i, "key").value_or("")] = r.int64_at(i, "n");
  return out;
}

std::vector<WaiterQueue> list_waiter_queues(Connection& conn, const TableNames& tables,
                                            std::string_view key_prefix) {
  const detail::Statement list(detail::server_sql(conn.server()).operators.waiter_queues,
                               conn.dialect(), tables);
  const Result r =
      conn.execute(list.sql(), list.bind({{"prefix", Value(std::string(key_prefix))}}));
  std::vector<WaiterQueue> out;
  out.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto text = [&](std::string_view col) { return r.at(i, col).value_or(""); };
    out.push_back(WaiterQueue{text("key"), r.int64_at(i, "n"), text("head_host"),
                              text("head_process"), text("head_thread"), text("head_since")});
  }
  return out;
}

std::string database_now(Connection& conn) {
  const Result r = conn.execute(detail::server_sql(conn.server()).operators.now);
  return r.at(0, "now").value_or("");
}

std::vector<PermitRow> list_permits(Connection& conn, const TableNames& tables) {
  return list_permits(conn, tables, "");
}

std::vector<PermitRow> list_permits(Connection& conn, const TableNames& tables,
                                    std::string_view key_prefix) {
  const detail::Statement list(detail::server_sql(conn.server()).operators.permits, conn.dialect(),
                               tables);
  const Result r =
      conn.execute(list.sql(), list.bind({{"prefix", Value(std::string(key_prefix))}}));
  std::vector<LockRow> locks = to_rows(r);
  std::vector<PermitRow> out;
  out.reserve(locks.size());
  for (std::size_t i = 0; i < locks.size(); ++i) {
    const auto limit = r.at(i, "permits");
    out.push_back(PermitRow{std::move(locks[i]), r.int64_at(i, "slot"),
                            limit ? r.int64_at(i, "permits") : 0});
  }
  return out;
}

bool release_lock_row(Connection& conn, const TableNames& tables, const LockRow& row) {
  const Dialect d = conn.dialect();
  const detail::Statement release(detail::server_sql(conn.server()).operators.release, d, tables);
  Result r = conn.execute(release.sql(), release.bind({{"key", Value(row.key)},
                                                       {"lease_id", Value(row.lease_id)},
                                                       {"token", Value(row.fencing_token)},
                                                       {"channel", Value(tables.name("locks"))}}));
  // PostgreSQL returns a row per freed lock (it NOTIFYs waiters); MySQL reports affected rows.
  return d == Dialect::kPostgreSQL ? r.size() == 1 : r.affected_rows() == 1;
}

bool release_permit_row(Connection& conn, const TableNames& tables, const PermitRow& permit) {
  const detail::Statement release(detail::server_sql(conn.server()).operators.release_permit,
                                  conn.dialect(), tables);
  const LockRow& row = permit.lock;
  Result r = conn.execute(release.sql(), release.bind({{"key", Value(row.key)},
                                                       {"slot", Value(permit.slot)},
                                                       {"lease_id", Value(row.lease_id)},
                                                       {"token", Value(row.fencing_token)}}));
  return r.affected_rows() == 1;
}

}  // namespace dblock
