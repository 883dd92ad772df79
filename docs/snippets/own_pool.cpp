#include <chrono>
#include <dblock/open.hpp>
#include <memory>

// dblock's own small pool, opened from a URL (DBLOCK_URL here; the password may come from
// DBLOCK_PASSWORD or DBLOCK_PASSWORD_FILE instead, to keep it out of `ps` and crontabs).
std::unique_ptr<dblock::Pool> open_lock_pool() {
  dblock::DatabaseUrl url = dblock::DatabaseUrl::resolve(std::nullopt);
  return dblock::open_pool(url, {.max_size = 8, .acquire_timeout = std::chrono::seconds(5)});
}
