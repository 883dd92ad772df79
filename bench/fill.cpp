// SPDX-License-Identifier: Apache-2.0
#include "fill.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dblock/open.hpp"

namespace dblock::bench {

namespace {

constexpr std::int64_t kChunk = 1'000'000;
// Below this, inserting into the index as we go is cheaper than rebuilding it.
constexpr std::int64_t kBulk = 500'000;

const char* const kColumns =
    " (lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count, fencing_token,"
    " acquired_at, expires_at)";

// n = 0 .. 999,999 from six decimal digits: MySQL has no row generator.
std::string mysql_digits() {
  const std::string digit =
      "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4"
      " UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8"
      " UNION ALL SELECT 9)";
  std::string out =
      "(SELECT d0.d + 10 * d1.d + 100 * d2.d + 1000 * d3.d + 10000 * d4.d"
      " + 100000 * d5.d AS seq FROM ";
  for (int i = 0; i < 6; ++i) {
    out += (i ? " CROSS JOIN " : "") + digit + " d" + std::to_string(i);
  }
  return out + ")";
}

// "seq_0_to_999999" when the server has MariaDB's SEQUENCE engine, else the cross join.
std::string mysql_generator(Connection& conn) {
  try {
    conn.execute("SELECT seq FROM seq_0_to_0");
    return "seq_0_to_999999";
  } catch (const std::exception&) {
    return mysql_digits();
  }
}

void insert_chunk(Connection& conn, const std::string& table, const std::string& generator,
                  const std::string& stem, std::int64_t from, std::int64_t n,
                  std::int64_t expires_in_seconds) {
  if (conn.dialect() == Dialect::kPostgreSQL) {
    conn.execute("INSERT INTO " + table + kColumns +
                     " SELECT $1::text || lpad(g::text, 10, '0'), 'fill', 'h', 'p', 't', 1, g,"
                     " statement_timestamp(),"
                     " statement_timestamp() + $4::bigint * interval '1 second'"
                     " FROM generate_series($2::bigint, $3::bigint) g",
                 {stem, from, from + n - 1, expires_in_seconds});
  } else {
    conn.execute("INSERT INTO " + table + kColumns +
                     " SELECT CONCAT(?, LPAD(? + g.seq, 10, '0')), 'fill', 'h', 'p', 't', 1,"
                     " ? + g.seq, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? SECOND"
                     " FROM " +
                     generator + " g WHERE g.seq < ? ORDER BY g.seq",
                 {stem, from, from, expires_in_seconds, n});
  }
}

}  // namespace

double fill_lock_rows(const DatabaseUrl& url, Connection& conn, const TableNames& tables,
                      const std::string& stem, std::int64_t first, std::int64_t count,
                      std::int64_t expires_in_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const Dialect d = conn.dialect();
  const bool pg = d == Dialect::kPostgreSQL;
  const std::string table = tables.qualified(d, "locks");
  // The index as the migrations name it: prefixed on PostgreSQL, per table on MySQL.
  const std::string index =
      pg ? quote_identifier(d, tables.name("locks_expires_at_idx")) : "`expires_at_idx`";
  const bool bulk = count >= kBulk;
  if (bulk) {
    conn.execute(pg ? "DROP INDEX " + (tables.schema().empty()
                                           ? index
                                           : quote_identifier(d, tables.schema()) + "." + index)
                    : "ALTER TABLE " + table + " DROP INDEX " + index);
  }
  const std::string generator = pg ? "" : mysql_generator(conn);
  // Chunks go to kWriters connections at once: one INSERT ... SELECT keeps one server process
  // (PostgreSQL) or thread (MariaDB) busy, and the WAL / redo log takes more.
  constexpr int kWriters = 2;
  std::vector<std::thread> writers;
  std::exception_ptr error;
  std::mutex error_mu;
  for (int w = 0; w < (bulk ? kWriters : 1); ++w) {
    writers.emplace_back([&, w] {
      try {
        std::unique_ptr<Connection> own = w == 0 ? nullptr : open_connection(url);
        Connection& c = w == 0 ? conn : *own;
        int chunk = 0;
        for (std::int64_t from = first; from < first + count; from += kChunk, ++chunk) {
          if (chunk % (bulk ? kWriters : 1) != w) continue;
          insert_chunk(c, table, generator, stem, from, std::min(kChunk, first + count - from),
                       expires_in_seconds);
        }
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& t : writers) t.join();
  if (error) std::rethrow_exception(error);
  if (bulk) {
    conn.execute(pg ? "CREATE INDEX " + index + " ON " + table + " (expires_at)"
                    : "ALTER TABLE " + table + " ADD INDEX " + index + " (expires_at)");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dblock::bench
