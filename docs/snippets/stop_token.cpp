#include <chrono>
#include <dblock/unique_key_lock.hpp>
#include <stop_token>

bool reconcile_next_batch();  // your code: one short step of a long job; false when all is done

// A long job under one key: each step checks the lease's stop token, so the job stops when the
// lease could run out (a renewal failing for two thirds of the TTL) or was found lost, before
// another owner could hold the key.
bool reconcile(dblock::UniqueKeyLock& locks) {
  using namespace std::chrono_literals;
  dblock::LockOptions options;
  options.ttl = 15s;
  options.stop_margin = 5s;  // stop 5 s before the lease could expire unrenewed
  auto finished = dblock::with_lock(locks, "reconciler", 0ms, options,
                                    [](dblock::Lease&, std::stop_token stop) {
                                      while (!stop.stop_requested()) {
                                        if (!reconcile_next_batch()) return true;
                                      }
                                      return false;  // stopped: the next holder goes on
                                    });
  return finished.value_or(false);
}
