#include <chrono>
#include <cstdint>
#include <dblock/read_write_lock.hpp>

void show_prices();                             // your code
void store_prices(std::int64_t fencing_token);  // your code

void read_then_write_prices(dblock::ConnectionSource& pool) {
  using namespace std::chrono_literals;
  dblock::ReadWriteLock prices(pool);  // up to 100 readers of a key at once
  if (auto read = prices.reader().acquire("prices:eu", 5s)) show_prices();
  if (auto write = prices.writer().acquire("prices:eu", 30s)) store_prices(write->fencing_token());
}
