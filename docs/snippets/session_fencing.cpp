#include <chrono>
#include <dblock/fence.hpp>
#include <dblock/session_lock.hpp>

// Closes the day in the ledger on the session lock's own connection: the session that holds the
// lock is the one that commits, so a session that ended (and freed the lock with it) commits
// nothing.
bool close_day_fenced(dblock::ConnectionSource& pool) {
  dblock::SessionLock locks(pool);
  auto lease = locks.acquire("ledger", std::chrono::seconds(5));
  if (!lease) return false;                // busy
  dblock::SessionConnection conn(*lease);  // the lease's own connection, for this scope
  conn->begin();                           // rolled back when conn ends, unless committed
  dblock::fence(*lease, *conn);            // no statement: the session is the fence
  conn->execute("INSERT INTO ledger_days (closed) VALUES (1)");
  conn->commit();  // fails if the session, and with it the lock, ended
  return true;
}
