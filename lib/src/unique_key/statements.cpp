// SPDX-License-Identifier: Apache-2.0
// The unique-key lock's statements: rendered for each server of the lock's dialect when the lock
// object is built (the SQL itself is in lib/src/sql/), and run with the lock's retries for
// contention and a lost connection. Thread-safety: see lock_impl.hpp.
#include <algorithm>
#include <string>
#include <utility>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"
#include "ttl_lease.hpp"
#include "unique_key/lock_impl.hpp"

namespace dblock {

namespace {

// The unique-key SQL of `dialect`, for what is alike on its servers (MySQL stands for MariaDB).
const detail::UniqueKeySql& dialect_sql(Dialect dialect) {
  return detail::server_sql(dialect == Dialect::kPostgreSQL ? Server::kPostgreSQL : Server::kMySQL)
      .unique_key;
}

}  // namespace

detail::UniqueKeyLockCore::UniqueKeyLockCore(ConnectionSource& src, UniqueKeyLockOptions opts)
    : source(src),
      options(std::move(opts)),
      dialect(src.dialect()),
      statements(dialect,
                 [&](const detail::ServerSql& server) {
                   const detail::UniqueKeySql& sql = server.unique_key;
                   const bool relaxed = options.relaxed_durability;
                   const bool fair = options.fair;  // else lock_waiters is never read
                   const TableNames& tables = options.tables;
                   return Statements{
                       detail::Statement(sql.acquire, dialect, tables, relaxed, fair),
                       detail::Statement(sql.release, dialect, tables, relaxed, fair),
                       detail::Statement(sql.release_rest, dialect, tables, relaxed, fair),
                       detail::Statement(sql.hand_over, dialect, tables, relaxed, fair),
                       detail::Statement(sql.renew, dialect, tables, relaxed),
                       detail::Statement(sql.claim, dialect, tables),
                       detail::Statement(sql.fair_check, dialect, tables),
                       detail::Statement(sql.enqueue, dialect, tables),
                       detail::Statement(sql.leave, dialect, tables),
                       detail::Statement(sql.offer, dialect, tables),
                       detail::Statement(sql.candidate, dialect, tables),
                       detail::Statement(sql.wake, dialect, tables),
                       detail::Statement(sql.fence, dialect, tables),
                       detail::Statement(sql.reread_id, dialect, tables)};
                 }),
      holds_scope(std::string(to_string(dialect)) + '\n' +
                  options.tables.qualified(dialect, "locks") + '\n'),
      rows(dialect_sql(dialect).results_in_rows),
      release_count_plus_one(dialect_sql(dialect).release_count_plus_one),
      leaves_queue(dialect_sql(dialect).acquire_leaves_queue),
      joins_queue(dialect_sql(dialect).acquire_joins_queue),
      channel(options.tables.name("locks")) {
  if (options.fair && (options.waiter_ttl < std::chrono::milliseconds(300) ||
                       options.waiter_ttl > std::chrono::hours(1))) {
    throw Error(ErrorCode::kInvalidArgument, "waiter_ttl must be from 300 ms to 1 hour; got " +
                                                 std::to_string(options.waiter_ttl.count()) +
                                                 " ms");
  }
  if (options.notify) {
    listener_ =
        std::make_unique<detail::ReleaseListener>(source, channel, dialect == Dialect::kPostgreSQL);
  }
}

detail::UniqueKeyLockCore::~UniqueKeyLockCore() {
  // A forked child's copy of the listener is left as it is (see release_listener.hpp).
  if (listener_ && listener_->made_elsewhere()) (void)listener_.release();
}

std::optional<Result> detail::UniqueKeyLockCore::run(detail::Statement Statements::*which,
                                                     std::span<const detail::Arg> args,
                                                     bool idempotent, detail::LeaseCore* renewing,
                                                     std::uint64_t sets_id_from) {
  // A retry of an upsert may find the row as its own lost attempt left it (1 affected row, the
  // value in the session only): its reply is asked again from 1 affected row on.
  bool retried = false;
  return detail::run_pooled(
      source, options.contention_retries, idempotent, renewing, [&](Connection& conn) {
        const detail::Statement& statement = statements[conn.server()].*which;
        if (statement.empty()) return Result();
        const std::uint64_t from = retried ? std::min(sets_id_from, kUpdateSetsId) : sets_id_from;
        retried = true;
        return returned(conn, conn.execute(statement.sql(), statement.bind(args)), from);
      });
}

Result detail::UniqueKeyLockCore::returned(Connection& conn, Result r,
                                           std::uint64_t sets_id_from) const {
  if (rows || sets_id_from == 0 || r.last_insert_id() != 0 || r.affected_rows() < sets_id_from) {
    return r;
  }
  const detail::Statement& reread = statements[conn.server()].reread_id;
  const Result id = conn.execute(reread.sql(), {});
  return Result({}, {}, r.affected_rows(), static_cast<std::uint64_t>(id.int64_at(0, "id")));
}

}  // namespace dblock
