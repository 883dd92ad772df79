#include <chrono>
#include <dblock/row_lock.hpp>
#include <string>

// Sells one voucher: the UPDATE commits together with the end of the lock, or not at all.
bool sell_voucher(dblock::ConnectionSource& pool, int voucher) {
  dblock::RowLock rows(pool);
  auto sold = dblock::with_lock(
      rows, "voucher:" + std::to_string(voucher), std::chrono::milliseconds(300), {},
      [&](dblock::Lease& lease) {
        dblock::Result r = lease.connection()->execute(
            "UPDATE vouchers SET stock = stock - 1 WHERE id = $1 AND stock > 0", {voucher});
        return r.affected_rows() == 1;
      });  // commits; an exception from the lambda rolls the UPDATE back instead
  return sold.value_or(false);  // nothing: not locked within 300 ms
}

// Locks a row of your own table by its primary key, instead of a row of dblock's table.
bool ship_order(dblock::RowLock& rows, long order) {
  auto lease = rows.try_acquire_row({"orders", "id", order});
  if (!lease) return false;  // another transaction holds that row
  lease->connection()->execute("UPDATE orders SET state = 'shipped' WHERE id = $1", {order});
  return lease->release() == dblock::ReleaseOutcome::kReleased;  // commits
}
