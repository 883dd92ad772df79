#include <chrono>
#include <dblock/conditional_update.hpp>
#include <dblock/optimistic_lock.hpp>
#include <string>

// Counts a visit. Nobody waits: if another writer commits under the same key first, this
// transaction is rolled back and the lambda runs again (up to 10 attempts by default).
int count_visit(dblock::ConnectionSource& pool, int page) {
  dblock::OptimisticLock versions(pool);
  dblock::LockAttempts tries;
  dblock::with_lock(
      versions, "page:" + std::to_string(page), std::chrono::seconds(5), {},
      [&](dblock::Lease& lease) {
        dblock::Connection& db = *lease.connection();  // the lease's transaction
        dblock::Result row = db.execute("SELECT visits FROM pages WHERE id = $1", {page});
        db.execute("UPDATE pages SET visits = $1 WHERE id = $2",
                   {row.int64_at(0, "visits") + 1, page});
      },
      &tries);
  return tries.attempts;  // 1 unless another writer got in between
}

// Compare-and-set on your own table, without a version row: sell one while any are left.
bool sell_one(dblock::Connection& conn, int voucher) {
  return dblock::conditional_update(conn, {.table = "vouchers",
                                           .key_column = "id",
                                           .key = voucher,
                                           .set = {dblock::Assignment::add("stock", -1)},
                                           .where = {{"stock", ">", 0}}}) ==
         dblock::CasOutcome::kApplied;
}
