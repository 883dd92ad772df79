#include <chrono>
#include <dblock/cleaner.hpp>

// Deletes rows expired for longer than `grace`, 1000 per statement, 50 ms apart (link
// dblock::cleaner). The connection must not be inside a transaction.
dblock::CleanResult clean_expired(dblock::Connection& conn, std::chrono::milliseconds grace) {
  dblock::CleanOptions options;
  options.batch_size = 1000;
  options.grace = grace;
  options.pause = std::chrono::milliseconds(50);
  return dblock::clean(conn, dblock::TableNames(), options);
}
