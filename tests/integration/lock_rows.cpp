// SPDX-License-Identifier: Apache-2.0
#include "lock_rows.hpp"

#include <algorithm>

namespace dblock::testing {

namespace {
// MySQL 8 stops a recursive CTE after 1000 rows by default (cte_max_recursion_depth).
constexpr std::uint64_t kChunk = 1000;
}  // namespace

void insert_lock_rows(Connection& conn, const TableNames& tables, const std::string& stem,
                      std::uint64_t count, std::optional<std::int64_t> seconds_from_now) {
  const Dialect d = conn.dialect();
  const std::string table = tables.qualified(d, "locks");
  const std::string columns =
      " (lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count,"
      " fencing_token, acquired_at, expires_at)";
  for (std::uint64_t first = 0; first < count; first += kChunk) {
    const auto n = static_cast<long long>(std::min(kChunk, count - first));
    const auto offset = static_cast<long long>(first);
    const long long seconds = seconds_from_now.value_or(0);
    if (d == Dialect::kPostgreSQL) {
      std::string expires = seconds_from_now
                                ? "clock_timestamp() + $4::bigint * interval '1 second'"
                                : "'infinity'::timestamptz + $4::bigint * interval '0 second'";
      conn.execute("INSERT INTO " + table + columns +
                       " SELECT $1::text || (g + $2::bigint), 'test', 'h', 'p', 't', 0, 1,"
                       " clock_timestamp(), " +
                       expires + " FROM generate_series(1, $3::bigint) g",
                   {stem, offset, n, seconds});
    } else {
      std::string expires = seconds_from_now ? "UTC_TIMESTAMP(6) + INTERVAL ? SECOND"
                                             : "'9999-12-31 23:59:59.999999' + INTERVAL ? SECOND";
      conn.execute("INSERT INTO " + table + columns +
                       " WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq"
                       " WHERE n < ?) SELECT CONCAT(?, n + ?), 'test', 'h', 'p', 't', 0, 1,"
                       " UTC_TIMESTAMP(6), " +
                       expires + " FROM seq",
                   {n, stem, offset, seconds});
    }
  }
}

std::uint64_t count_lock_rows(Connection& conn, const TableNames& tables, const std::string& stem) {
  const Dialect d = conn.dialect();
  const std::string like = d == Dialect::kPostgreSQL ? "$1" : "?";
  Result r = conn.execute(
      "SELECT COUNT(*) AS n FROM " + tables.qualified(d, "locks") + " WHERE lock_key LIKE " + like,
      {stem + "%"});
  return static_cast<std::uint64_t>(r.int64_at(0, "n"));
}

}  // namespace dblock::testing
