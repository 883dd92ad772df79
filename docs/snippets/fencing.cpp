#include <chrono>
#include <dblock/fence.hpp>
#include <dblock/unique_key_lock.hpp>
#include <string>

// Moves asset 42 to a new owner, committed only while this process holds the asset's lock: a
// holder that paused past its TTL and was taken over gets Error(kLeaseLost) from fence() and
// writes nothing.
bool move_asset_fenced(dblock::ConnectionSource& pool, const std::string& new_owner) {
  dblock::UniqueKeyLock locks(pool);
  auto lease = locks.acquire("asset:42", std::chrono::seconds(5));
  if (!lease) return false;    // busy
  auto conn = pool.acquire();  // a connection to the lock table's own database
  conn->begin();
  try {
    dblock::fence(*lease, *conn);  // from here, no other owner can take the key before the commit
    conn->execute("UPDATE assets SET owner = $1 WHERE id = 42",  // `?` on MySQL and MariaDB
                  {dblock::Value(new_owner)});
    conn->commit();
  } catch (...) {
    conn->rollback();
    throw;
  }
  return true;
}
