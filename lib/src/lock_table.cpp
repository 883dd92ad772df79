#include "dblock/lock_table.hpp"

#include "sql/dialect_sql.hpp"

namespace dblock {

std::vector<LockRow> list_locks(Connection& conn, const TableNames& tables) {
  const Dialect d = conn.dialect();
  Result r = conn.execute(detail::render_sql(detail::dialect_sql(d).lock_list, d, tables));
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

}  // namespace dblock
