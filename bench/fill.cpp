#include "fill.hpp"

#include <algorithm>
#include <chrono>

namespace dblock::bench {

namespace {

constexpr std::int64_t kChunk = 1'000'000;

const char* const kColumns =
    " (lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count, fencing_token,"
    " acquired_at, expires_at)";

// Six decimal digits: n = 0 .. 999,999.
const char* const kMySQLDigits =
    "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
    " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8"
    " UNION ALL SELECT 9)";

}  // namespace

double fill_lock_rows(Connection& conn, const TableNames& tables, const std::string& stem,
                      std::int64_t first, std::int64_t count, std::int64_t expires_in_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const Dialect d = conn.dialect();
  const std::string table = tables.qualified(d, "locks");
  for (std::int64_t from = first; from < first + count; from += kChunk) {
    const std::int64_t n = std::min(kChunk, first + count - from);
    if (d == Dialect::kPostgreSQL) {
      conn.execute("INSERT INTO " + table + kColumns +
                       " SELECT $1::text || lpad(g::text, 10, '0'), 'fill', 'h', 'p', 't', 1, g,"
                       " statement_timestamp(),"
                       " statement_timestamp() + $4::bigint * interval '1 second'"
                       " FROM generate_series($2::bigint, $3::bigint) g",
                   {stem, from, from + n - 1, expires_in_seconds});
    } else {
      std::string digits;
      for (int i = 0; i < 6; ++i) {
        digits += std::string(i ? " CROSS JOIN " : "") + kMySQLDigits + " d" + std::to_string(i);
      }
      conn.execute("INSERT INTO " + table + kColumns +
                       " SELECT CONCAT(?, LPAD(g.n, 10, '0')), 'fill', 'h', 'p', 't', 1, g.n,"
                       " UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? SECOND"
                       " FROM (SELECT ? + d0.d + 10 * d1.d + 100 * d2.d + 1000 * d3.d"
                       " + 10000 * d4.d + 100000 * d5.d AS n FROM " +
                       digits + ") g WHERE g.n < ?",
                   {stem, expires_in_seconds, from, from + n});
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dblock::bench
