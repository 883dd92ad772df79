#include <chrono>
#include <dblock/unique_key_lock.hpp>

// Waiters get the key in the order they came, whichever process or host they wait in.
bool print_in_turn(dblock::ConnectionSource& pool) {
  using namespace std::chrono_literals;
  dblock::UniqueKeyLock printer(pool, {.fair = true, .waiter_ttl = 5s});
  auto lease = printer.acquire("printer:3", 30s);
  return lease.has_value();
}
