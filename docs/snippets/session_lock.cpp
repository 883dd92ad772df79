#include <cstdint>
#include <dblock/session_lock.hpp>

void build_monthly_report(std::int64_t fencing_token);  // your code

// Only saves duplicate work: a second instance that finds the report being built skips it.
bool build_report_once(dblock::ConnectionSource& pool) {
  dblock::SessionLock sessions(pool);
  if (auto lease = sessions.try_acquire("report:2024-06")) {  // one round trip, no table write
    build_monthly_report(lease->fencing_token());
    return true;
  }  // unlocked here, one round trip
  return false;
}
