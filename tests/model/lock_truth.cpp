// SPDX-License-Identifier: Apache-2.0
#include "lock_truth.hpp"

namespace dblock::testing {

namespace {

std::string truth_sql(Dialect d, const std::string& table) {
  if (d == Dialect::kPostgreSQL) {
    return "SELECT lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count,"
           " fencing_token, CASE WHEN expires_at = 'infinity' THEN 1 ELSE 0 END AS forever,"
           " CASE WHEN expires_at = 'infinity' THEN 0 ELSE"
           " floor(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint END"
           " AS remaining_ms FROM " +
           table;
  }
  return "SELECT lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count,"
         " fencing_token, CASE WHEN expires_at >= '9999-01-01' THEN 1 ELSE 0 END AS forever,"
         " CASE WHEN expires_at >= '9999-01-01' THEN 0 ELSE"
         " FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000) END"
         " AS remaining_ms FROM " +
         table;
}

}  // namespace

Truth read_truth(Connection& conn, const TableNames& tables) {
  const std::string sql = truth_sql(conn.dialect(), tables.qualified(conn.dialect(), "locks"));
  Truth t;
  t.from = ModelClock::now();
  Result r = conn.execute(sql);
  t.to = ModelClock::now();
  for (std::size_t i = 0; i < r.size(); ++i) {
    TruthRow row;
    row.key = r.at(i, "lock_key").value_or("");
    row.lease_id = r.at(i, "lease_id").value_or("");
    row.owner = Owner{r.at(i, "owner_host").value_or(""), r.at(i, "owner_process").value_or(""),
                      r.at(i, "owner_thread").value_or("")};
    row.hold_count = r.int64_at(i, "hold_count");
    row.fencing_token = r.int64_at(i, "fencing_token");
    row.forever = r.int64_at(i, "forever") != 0;
    row.remaining_ms = r.int64_at(i, "remaining_ms");
    t.rows[row.key] = row;
  }
  return t;
}

}  // namespace dblock::testing
