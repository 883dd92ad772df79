#include <chrono>
#include <cstdio>
#include <dblock/error.hpp>
#include <dblock/unique_key_lock.hpp>

void post_ledger_entries();  // your code

enum class Next { kDone, kBusy, kRetryLater, kCheckTheWork, kFixTheSetup };

// Outcomes are values; faults are dblock::Error, and its code says what to do next.
Next post_ledger(dblock::UniqueKeyLock& locks) {
  try {
    auto done = dblock::with_lock(locks, "ledger", std::chrono::seconds(2), {},
                                  [](dblock::Lease&) { post_ledger_entries(); });
    return done ? Next::kDone : Next::kBusy;  // not obtained within 2 s: a value, not an error
  } catch (const dblock::Error& e) {
    std::fprintf(stderr, "ledger: %s\n", e.what());  // one line, never a password
    if (e.code() == dblock::ErrorCode::kLeaseLost) return Next::kCheckTheWork;
    if (e.retry_scope() != dblock::RetryScope::kNone) return Next::kRetryLater;
    return Next::kFixTheSetup;  // input, credentials, grants or schema: retrying will not help
  }
}
