#include <dblock/connection_source.hpp>
#include <dblock/libpqxx.hpp>
#include <dblock/unique_key_lock.hpp>
#include <pqxx/pqxx>

// Locks through the service's own pqxx::connection. While dblock objects use it, send the
// service's statements through dblock too: dblock and its background renewer take turns on it.
bool import_with_my_connection(pqxx::connection& mine) {
  auto conn = dblock::wrap_pqxx(mine);
  auto source = dblock::borrow(*conn);  // one connection, lent to one caller at a time
  dblock::UniqueKeyLock locks(*source);
  auto lease = locks.try_acquire("import:daily");
  if (!lease) return false;
  source->acquire()->execute("UPDATE imports SET started_at = now() WHERE name = 'daily'");
  return lease->release() == dblock::ReleaseOutcome::kReleased;
}
