#include <chrono>
#include <cstdio>
#include <dblock/migrator.hpp>
#include <dblock/open.hpp>
#include <dblock/unique_key_lock.hpp>

int main() {
  auto pool = dblock::open_pool(dblock::DatabaseUrl::resolve(std::nullopt));  // from DBLOCK_URL
  dblock::Migrator(*pool->acquire()).up();  // creates or upgrades dblock's tables, at every start
  dblock::UniqueKeyLock locks(*pool);

  if (auto lease = locks.try_acquire("invoice:42")) {  // one statement; nothing when it is held
    std::printf("holding %s, fencing token %lld\n", lease->key().c_str(),
                static_cast<long long>(lease->fencing_token()));  // pass it to the writes it guards
  }                                                               // released here
  auto ran =
      dblock::with_lock(locks, "nightly-report", std::chrono::seconds(10), {},
                        [](dblock::Lease&) { std::puts("one instance at a time runs this"); });
  return ran ? 0 : 75;  // 75: not obtained within 10 s
}
