#include <chrono>
#include <cstdint>
#include <dblock/unique_key_lock.hpp>

void print_labels(std::int64_t fencing_token);  // your code: a printer that cannot check tokens

// A holder that dies mid-batch keeps the printer's key 5 s past its TTL, so the labels it already
// sent are printed before the next holder's.
bool print_labels_once(dblock::UniqueKeyLock& locks) {
  using namespace std::chrono_literals;
  dblock::LockOptions options;
  options.ttl = 10s;
  options.lock_delay = 5s;  // after a crash: free 10 s + 5 s after the holder's last renewal
  if (auto lease = locks.try_acquire("printer:3", options)) {
    print_labels(lease->fencing_token());
    return true;
  }  // released here: after a clean end the key is free at once
  return false;
}
