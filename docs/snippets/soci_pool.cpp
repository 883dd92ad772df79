#include <cstddef>
#include <dblock/soci.hpp>
#include <dblock/unique_key_lock.hpp>

// Sessions for dblock come from the service's soci::connection_pool of `size` sessions.
bool lock_through_soci(soci::connection_pool& pool, std::size_t size) {
  auto source = dblock::soci_pool_source(pool, size);
  dblock::UniqueKeyLock locks(*source);
  auto lease = locks.try_acquire("soci:nightly");
  return lease.has_value();
}
