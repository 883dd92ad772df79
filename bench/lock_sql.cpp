#include "lock_sql.hpp"

#include "lock_keys.hpp"
#include "sql/dialect_sql.hpp"

namespace dblock::bench {

LockSql::LockSql(Dialect d, const TableNames& tables)
    : dialect(d),
      acquire(detail::render_sql(detail::dialect_sql(d).lock_acquire, d, tables)),
      release(detail::render_sql(detail::dialect_sql(d).lock_release, d, tables)),
      channel(tables.name("locks")) {}

std::vector<Value> LockSql::acquire_params(const std::string& key, const std::string& lease_id,
                                           const Owner& owner, std::int64_t ttl_ms) const {
  return {
      Value(key),    Value(lease_id), Value(owner.host), Value(owner.process), Value(owner.thread),
      Value(ttl_ms), Value()};
}

std::vector<Value> LockSql::release_params(const std::string& key, const Owner& owner,
                                           std::int64_t token) const {
  std::vector<Value> params{Value(key), Value(owner.host), Value(owner.process),
                            Value(owner.thread), Value(token)};
  if (dialect == Dialect::kPostgreSQL) params.emplace_back(channel);
  return params;
}

std::string random_key(const std::string& prefix) { return prefix + detail::random_lease_id(); }

}  // namespace dblock::bench
