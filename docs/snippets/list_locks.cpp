#include <cstdio>
#include <dblock/lock_table.hpp>

// Who holds what, as `dblock locks` shows it. Returns how many rows were listed.
std::size_t print_holders(dblock::Connection& conn) {
  auto rows = dblock::list_locks(conn, dblock::TableNames(), "jobs:");  // keys starting "jobs:"
  for (const dblock::LockRow& row : rows) {
    std::printf("%s held by %s/%s/%s until %s, token %lld%s\n", row.key.c_str(),
                row.owner_host.c_str(), row.owner_process.c_str(), row.owner_thread.c_str(),
                row.expires_at.c_str(), static_cast<long long>(row.fencing_token),
                row.expired ? " (expired)" : "");
  }
  return rows.size();
}
