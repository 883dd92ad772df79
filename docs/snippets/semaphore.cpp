#include <chrono>
#include <cstdint>
#include <dblock/semaphore.hpp>

void run_export(std::int64_t fencing_token);  // your code

// At most 3 exports at once, across every process and host using this database.
bool run_export_when_allowed(dblock::ConnectionSource& pool) {
  dblock::Semaphore exports(pool, 3);  // 3 permits per key
  if (auto permit = exports.acquire("jobs:export", std::chrono::seconds(10))) {  // waits up to 10 s
    run_export(permit->fencing_token());
    return true;
  }  // the permit is given back here
  return false;
}
