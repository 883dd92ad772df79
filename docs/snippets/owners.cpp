#include <chrono>
#include <cstdio>
#include <dblock/unique_key_lock.hpp>
#include <string>

// Work that moves between threads (a job resumed by a pool of workers) names its owner, so
// re-entry and release follow the job, not the thread.
bool run_job_step(dblock::UniqueKeyLock& locks, const std::string& job) {
  dblock::LockOptions options{.ttl = std::chrono::seconds(60),
                              .owner = dblock::Owner::named("job:" + job)};
  options.on_lost = [](const std::string& key) {  // from a background thread; must not block
    std::fprintf(stderr, "lease on %s lost: stop writing\n", key.c_str());
  };
  auto outer = locks.try_acquire("batch:" + job, options);
  if (!outer) return false;                                 // another owner holds it
  auto inner = locks.try_acquire("batch:" + job, options);  // the same owner re-enters
  bool same_token = inner && inner->fencing_token() == outer->fencing_token();
  inner.reset();  // gives one hold back; the key stays held by the job
  return same_token && !outer->lost();
}
