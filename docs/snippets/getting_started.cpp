// A service with a table of its own: it moves an asset to a new owner under a lock, and the
// write itself checks the lock's fencing token. Run it with DBLOCK_URL set, e.g.
//   DBLOCK_URL='postgresql://app@127.0.0.1:5432/app' ./move_asset alice
#include <chrono>
#include <cstdio>
#include <dblock/error.hpp>
#include <dblock/migrator.hpp>
#include <dblock/open.hpp>
#include <dblock/unique_key_lock.hpp>

int main(int argc, char** argv) try {
  const char* new_owner = argc > 1 ? argv[1] : "alice";
  auto pool = dblock::open_pool(dblock::DatabaseUrl::resolve(std::nullopt));

  {  // At start-up: dblock's tables, then the service's own.
    auto conn = pool->acquire();
    dblock::Migrator(*conn).up();
    conn->execute(
        "CREATE TABLE IF NOT EXISTS assets ("
        " id bigint PRIMARY KEY, owner text NOT NULL, fence bigint NOT NULL DEFAULT 0)");
    conn->execute("INSERT INTO assets (id, owner) VALUES (1, 'nobody') ON CONFLICT DO NOTHING");
  }

  dblock::UniqueKeyLock locks(*pool);
  auto lease = locks.acquire("asset:1", std::chrono::seconds(5));
  if (!lease) {
    std::fprintf(stderr, "asset 1 is busy; try again later\n");
    return 75;
  }

  // Fenced write: a holder whose lease ran out and was taken over has a smaller token than the
  // row's, so its late write changes nothing.
  auto conn = pool->acquire();
  dblock::Result moved =
      conn->execute("UPDATE assets SET owner = $1, fence = $2 WHERE id = 1 AND fence < $2",
                    {new_owner, lease->fencing_token()});
  conn.reset();
  lease->release();
  std::printf("asset 1 %s %s\n", moved.affected_rows() == 1 ? "now belongs to" : "was not moved to",
              new_owner);
  return moved.affected_rows() == 1 ? 0 : 1;
} catch (const dblock::Error& e) {
  std::fprintf(stderr, "move_asset: %s\n", e.what());  // says what to do, e.g. fix DBLOCK_URL
  return 1;
}
