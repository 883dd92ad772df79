// SPDX-License-Identifier: Apache-2.0
#include "dblock/cleaner.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "dblock/error.hpp"
#include "isolation.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock {

namespace {

using Clock = std::chrono::steady_clock;

// A deadlock or lock wait timeout rolls back only the failed batch; retry it this often.
constexpr int kBatchAttempts = 5;

bool stopped(const CleanOptions& options) {
  return options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
}

// Sleeps up to `d`, waking early when `stop` is set. Returns false when stopped.
bool pause_for(std::chrono::milliseconds d, const CleanOptions& options) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
    if (stopped(options)) return false;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
  }
  return !stopped(options);
}

// Runs `batch` again, up to kBatchAttempts times with a short pause, while it fails with a
// deadlock, a lock wait timeout or a serialization failure (cleaners and lock statements that
// met on the same rows); any other error, or the last attempt's, is thrown.
template <class Fn>
auto retrying_contention(Fn&& batch) {
  for (int attempt = 1;; ++attempt) {
    try {
      return batch();
    } catch (const Error& e) {
      const bool transient = e.code() == ErrorCode::kDeadlock ||
                             e.code() == ErrorCode::kLockWaitTimeout ||
                             e.code() == ErrorCode::kSerializationFailure;
      if (!transient || attempt >= kBatchAttempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
    }
  }
}

// One batch, in autocommit; or, when `read_committed` (a PostgreSQL session whose default level
// is stricter), in a transaction of its own at READ COMMITTED: under REPEATABLE READ or
// SERIALIZABLE two cleaners (or a cleaner and the lock statements) abort each other's batches
// with serialization failures although SKIP LOCKED keeps them apart.
std::uint64_t delete_batch(Connection& conn, const detail::Statement& statement,
                           const CleanOptions& options, std::uint64_t limit, bool read_committed) {
  const std::vector<Value> params =
      statement.bind({{"grace_ms", Value(options.grace.count())},
                      {"retention_ms", Value(options.history_retention.count())},
                      {"limit", Value(static_cast<long long>(limit))}});
  return retrying_contention([&]() -> std::uint64_t {
    if (!read_committed) return conn.execute(statement.sql(), params).affected_rows();
    detail::begin_at(conn, detail::Isolation::kReadCommitted);
    try {
      const std::uint64_t n = conn.execute(statement.sql(), params).affected_rows();
      conn.commit();
      return n;
    } catch (...) {
      conn.rollback();
      throw;
    }
  });
}

// What one batch did.
struct Batch {
  std::uint64_t deleted = 0;
  bool drained = false;  // fewer rows were left than the batch could take
};

// One batch of a table whose rows are unused only while another table has none of their key
// (CleanedTable::lock_sql), in a transaction at READ COMMITTED: lock the candidates, then delete
// those a read made after the locks still finds unused. Retried as delete_batch is.
Batch delete_locked_batch(Connection& conn, const detail::Statement& lock_statement,
                          const detail::Statement& delete_statement,
                          std::chrono::milliseconds grace, std::uint64_t limit) {
  const std::vector<Value> lock_params = lock_statement.bind(
      {{"grace_ms", Value(grace.count())}, {"limit", Value(static_cast<long long>(limit))}});
  return retrying_contention([&]() -> Batch {
    detail::begin_at(conn, detail::Isolation::kReadCommitted);
    try {
      const Result locked = conn.execute(lock_statement.sql(), lock_params);
      std::uint64_t deleted = 0;
      if (!locked.empty()) {
        nlohmann::json keys = nlohmann::json::array();
        for (std::size_t i = 0; i < locked.size(); ++i) {
          keys.push_back(locked.at(i, "lock_key").value_or(""));
        }
        const detail::Arg args[] = {{"keys", Value(keys.dump())}};
        deleted = conn.execute(delete_statement.sql(), delete_statement.bind(args)).affected_rows();
      }
      conn.commit();
      // A row locked and then found in use (a permit committed just before the lock) is left.
      return Batch{deleted, locked.size() < limit};
    } catch (...) {
      conn.rollback();
      throw;
    }
  });
}

void validate(const CleanOptions& options) {
  if (options.batch_size == 0) {
    throw Error(ErrorCode::kInvalidArgument, "cleaner batch size must be at least 1");
  }
  if (options.grace.count() < 0 || options.max_time.count() < 0 || options.pause.count() < 0 ||
      options.history_retention.count() < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "cleaner grace, history retention, max time and pause must not be negative");
  }
  // Keep the grace and retention representable in µs on MySQL and as signed 64-bit parameters.
  if (options.grace > std::chrono::hours(24 * 365 * 100)) {
    throw Error(ErrorCode::kInvalidArgument, "cleaner grace must be at most 100 years");
  }
  if (options.history_retention > std::chrono::hours(24 * 365 * 100)) {
    throw Error(ErrorCode::kInvalidArgument, "cleaner history retention must be at most 100 years");
  }
}

}  // namespace

CleanResult clean(Connection& conn, const TableNames& tables, const CleanOptions& options) {
  validate(options);
  if (conn.in_transaction()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the cleaner must run outside a transaction: each batch commits on its own");
  }
  const auto started = Clock::now();
  const Dialect dialect = conn.dialect();
  const detail::CleanerSql& sql = detail::server_sql(conn.server()).cleaner;
  constexpr std::uint64_t kNoLimit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::uint64_t budget = options.max_rows == 0 ? kNoLimit : options.max_rows;

  CleanResult result;
  result.dry_run = options.dry_run;
  bool read_committed = false;
  if (dialect == Dialect::kPostgreSQL && !options.dry_run) {
    const detail::Isolation level = detail::SessionIsolation().default_level(conn);
    read_committed =
        level == detail::Isolation::kRepeatableRead || level == detail::Isolation::kSerializable;
  }
  for (const detail::CleanedTable& table : sql.tables) {
    std::uint64_t& count = result.tables[std::string(table.base)];
    if (options.dry_run) {
      const detail::Statement count_statement(table.count_sql, dialect, tables);
      Result r =
          conn.execute(count_statement.sql(),
                       count_statement.bind(
                           {{"grace_ms", Value(options.grace.count())},
                            {"retention_ms", Value(options.history_retention.count())},
                            {"limit", Value(static_cast<long long>(budget - result.deleted))}}));
      count = static_cast<std::uint64_t>(r.int64_at(0, "n"));
      result.deleted += count;
      if (result.deleted >= budget) result.complete = false;
      continue;
    }
    const detail::Statement delete_statement(table.delete_sql, dialect, tables);
    std::optional<detail::Statement> lock_statement;
    if (!table.lock_sql.empty()) lock_statement.emplace(table.lock_sql, dialect, tables);
    for (;;) {
      if (result.batches > 0 && options.pause.count() > 0 && !pause_for(options.pause, options)) {
        result.complete = false;
        break;
      }
      if (result.deleted >= budget || stopped(options) ||
          (options.max_time.count() > 0 && Clock::now() - started >= options.max_time)) {
        result.complete = false;
        break;
      }
      const std::uint64_t limit = std::min(options.batch_size, budget - result.deleted);
      Batch batch;
      if (lock_statement) {
        batch = delete_locked_batch(conn, *lock_statement, delete_statement, options.grace, limit);
      } else {
        batch.deleted = delete_batch(conn, delete_statement, options, limit, read_committed);
        batch.drained = batch.deleted < limit;
      }
      ++result.batches;
      count += batch.deleted;
      result.deleted += batch.deleted;
      if (options.on_batch) options.on_batch(CleanProgress{result.deleted, result.batches});
      if (batch.drained) break;
    }
    if (!result.complete) break;
  }

  Result oldest = conn.execute(detail::render_sql(sql.locks_oldest, dialect, tables));
  if (!oldest.empty()) result.oldest_expiry_left = oldest.at(0, "oldest");
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  return result;
}

}  // namespace dblock
