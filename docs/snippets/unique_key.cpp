#include <chrono>
#include <cstdint>
#include <dblock/timed_lockable.hpp>
#include <dblock/unique_key_lock.hpp>
#include <mutex>
#include <string>

void move_asset(int asset, std::int64_t fencing_token);  // your code; rejects smaller tokens
void build_report();                                     // your code

void unique_key_examples(dblock::ConnectionSource& pool) {
  using namespace std::chrono_literals;
  dblock::UniqueKeyLock locks(pool);

  if (auto lease = locks.try_acquire("asset:42")) {  // one statement
    move_asset(42, lease->fencing_token());          // fence your own writes with the token
  }                                                  // released here (or lease->release())

  if (auto lease = locks.acquire("report", 10s)) {  // waits up to 10 s
    build_report();
  }

  // Runs the lambda under the lock and releases it on every path; a 2-minute TTL, renewed in
  // the background while the lambda runs.
  dblock::with_lock(locks, "report", 10s, {.ttl = 2min}, [](dblock::Lease&) { build_report(); });

  dblock::LockableKey nightly(locks, "cron:nightly");  // std::unique_lock and scoped_lock work
  if (std::unique_lock guard(nightly, 1s); guard) build_report();
}

// Claim-once: the key is taken for good, so the order is placed once per user and voucher.
bool claim_voucher(dblock::UniqueKeyLock& locks, int user, int voucher) {
  auto claim = locks.claim("voucher:" + std::to_string(voucher) + ":user:" + std::to_string(user));
  return claim.has_value();  // false: this user has used this voucher already
}
