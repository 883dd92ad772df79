// SPDX-License-Identifier: Apache-2.0
#include "lock_sql.hpp"

#include "sql/server_sql.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"

namespace dblock::bench {

namespace {

// The statements of the dialect's servers that these loops send: MariaDB's are MySQL's (its own
// statements are only the row lock's bounded waits, which no raw loop sends).
const detail::ServerSql& sql_for(Dialect d) {
  return detail::server_sql(d == Dialect::kPostgreSQL ? Server::kPostgreSQL : Server::kMySQL);
}

// A row lock statement's parameters: the key and its owner.
std::vector<Value> key_and_owner(const detail::Statement& statement, const std::string& key,
                                 const Owner& owner) {
  return statement.bind(detail::owner_args(owner, {{"key", Value(key)}}));
}

}  // namespace

LockSql::LockSql(Dialect d, const TableNames& tables)
    : dialect(d),
      acquire(sql_for(d).unique_key.acquire, d, tables),
      channel(tables.name("locks")),
      release(sql_for(d).unique_key.release, d, tables) {}

std::vector<Value> LockSql::acquire_params(const std::string& key, const std::string& lease_id,
                                           const Owner& owner, std::int64_t ttl_ms) const {
  return acquire.bind(detail::owner_args(owner, {{"key", Value(key)},
                                                 {"lease_id", Value(lease_id)},
                                                 {"ttl_ms", Value(ttl_ms)},
                                                 {"lock_delay_ms", Value(0)},
                                                 {"metadata", Value()}}));
}

std::vector<Value> LockSql::release_params(const std::string& key, const Owner& owner,
                                           std::int64_t token,
                                           const std::string& release_id) const {
  return release.bind(detail::owner_args(owner, {{"key", Value(key)},
                                                 {"token", Value(token)},
                                                 {"channel", Value(channel)},
                                                 {"release_id", Value(release_id)},
                                                 {"min_hold_ms", Value(0)},
                                                 {"lock_delay_ms", Value(0)}}));
}

TransactionSql::TransactionSql(Dialect d, const TableNames& tables)
    : dialect(d),
      begin(d == Dialect::kPostgreSQL ? "BEGIN" : "START TRANSACTION"),
      commit("COMMIT"),
      rollback("ROLLBACK") {
  const detail::ServerSql& sql = sql_for(d);
  row_lock_try = detail::Statement(sql.row_lock.try_lock, d, tables);
  row_lock_stamp = detail::Statement(sql.row_lock.stamp, d, tables);
  version_read = detail::Statement(sql.versions.read, d, tables);
  version_create = detail::Statement(sql.versions.create, d, tables);
  version_cas = detail::Statement(sql.versions.cas, d, tables);
}

std::vector<Value> TransactionSql::row_lock_try_params(const std::string& key,
                                                       const Owner& owner) const {
  return key_and_owner(row_lock_try, key, owner);
}

std::vector<Value> TransactionSql::row_lock_stamp_params(const std::string& key,
                                                         const Owner& owner) const {
  return key_and_owner(row_lock_stamp, key, owner);
}

PermitSql::PermitSql(Dialect d, const TableNames& tables)
    : dialect(d),
      acquire(sql_for(d).semaphore.acquire, d, tables),
      slots(sql_for(d).semaphore.slots, d, tables),
      acquire_slot(sql_for(d).semaphore.acquire_slot, d, tables),
      release(sql_for(d).semaphore.release, d, tables),
      live_in_shared(sql_for(d).semaphore.live_in_shared, d, tables),
      live_in_exclusive(sql_for(d).semaphore.live_in_exclusive, d, tables),
      channel() {}

std::vector<Value> PermitSql::acquire_params(const detail::Statement& statement,
                                             const std::string& key, std::int64_t permits,
                                             const SlotRange& range, const std::string& lease_id,
                                             const Owner& owner, std::int64_t ttl_ms,
                                             std::int64_t slot) const {
  return statement.bind(detail::owner_args(owner, {{"key", Value(key)},
                                                   {"permits", Value(permits)},
                                                   {"lease_id", Value(lease_id)},
                                                   {"ttl_ms", Value(ttl_ms)},
                                                   {"lock_delay_ms", Value(0)},
                                                   {"metadata", Value()},
                                                   {"slot", Value(slot)},
                                                   {"first", Value(range.first)},
                                                   {"last", Value(range.last)},
                                                   {"blocked_by", Value(range.blocked_by)}}));
}

std::vector<Value> PermitSql::release_params(const std::string& key, const Owner& owner,
                                             std::int64_t token, const std::string& lease_id,
                                             const std::string& release_id) const {
  // A permit's token % 1024 is its slot (SemaphoreSql).
  return release.bind(detail::owner_args(owner, {{"key", Value(key)},
                                                 {"slot", Value(token % 1024)},
                                                 {"token", Value(token)},
                                                 {"lease_id", Value(lease_id)},
                                                 {"release_id", Value(release_id)},
                                                 {"min_hold_ms", Value(0)},
                                                 {"lock_delay_ms", Value(0)},
                                                 {"channel", Value(channel)}}));
}

std::vector<Value> PermitSql::live_in_params(const std::string& key, std::int64_t first,
                                             std::int64_t last) const {
  // Both forms take the same parameters.
  return live_in_shared.bind({{"key", Value(key)}, {"first", Value(first)}, {"last", Value(last)}});
}

std::string random_key(const std::string& prefix) { return prefix + detail::random_lease_id(); }

}  // namespace dblock::bench
