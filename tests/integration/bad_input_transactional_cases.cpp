// SPDX-License-Identifier: Apache-2.0
// The bad-input rows of the transactional strategies (bad_input.hpp): row locks, optimistic
// locks and conditional updates on the caller's own tables. Each row also checks that nothing
// was written: no row_locks or versions row for a refused key, no half-applied update.
#include "bad_input.hpp"
#include "bad_input_rows.hpp"
#include "dblock/conditional_update.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/row_lock.hpp"

namespace dblock::testing {

using Code = ErrorCode;

namespace {

RowLock row_locks_of(BadInputContext& ctx) { return RowLock(ctx.pool, {.tables = ctx.tables}); }

OptimisticLock optimistic_of(BadInputContext& ctx) {
  return OptimisticLock(ctx.pool, {.tables = ctx.tables});
}

// The caller's own table the rows below aim at: <prefix>orders (id, category, stock) with two
// rows of one category, so `category` is a column that is not unique.
std::string orders(const BadInputContext& ctx) { return ctx.tables.prefix() + "orders"; }

void create_orders(BadInputContext& ctx) {
  const std::string t = quote_table_name(ctx.backend.dialect, orders(ctx));
  ctx.conn.execute("CREATE TABLE " + t + " (id INT PRIMARY KEY, category INT, stock INT)");
  ctx.conn.execute("INSERT INTO " + t + " (id, category, stock) VALUES (1, 7, 5), (2, 7, 5)");
}

BadInputCase bad_row(std::string name, TableRow row, Code code, std::string fragment) {
  return {.name = std::move(name),
          .input = "try_acquire_row(" + row.table + ", " + row.key_column + ")",
          .setup = create_orders,
          .act =
              [row](BadInputContext& ctx) {
                TableRow r = row;
                if (r.table == "orders") r.table = orders(ctx);
                return outcome(row_locks_of(ctx).try_acquire_row(r));
              },
          .code = code,
          .expect = std::move(fragment)};
}

BadInputCase bad_update(std::string name, std::string input, ConditionalUpdate update,
                        std::string fragment) {
  return {.name = std::move(name),
          .input = std::move(input),
          .setup = create_orders,
          .act =
              [update](BadInputContext& ctx) {
                ConditionalUpdate u = update;
                if (u.table == "orders") u.table = orders(ctx);
                return std::string(to_string(conditional_update(ctx.conn, u)));
              },
          .code = Code::kInvalidArgument,
          .expect = std::move(fragment)};
}

ConditionalUpdate sell_one() {
  return {.table = "orders",
          .key_column = "id",
          .key = Value(1),
          .set = {Assignment::add("stock", -1)},
          .where = {{"stock", ">", Value(0)}}};
}

}  // namespace

std::vector<BadInputCase> transactional_cases() {
  const LockUnderTest row_lock{"RowLock", "RowLock", [](BadInputContext& ctx) {
                                 return std::make_unique<RowLock>(
                                     ctx.pool, RowLockOptions{.tables = ctx.tables});
                               }};
  const LockUnderTest optimistic{"Optimistic", "OptimisticLock", [](BadInputContext& ctx) {
                                   return std::make_unique<OptimisticLock>(
                                       ctx.pool, OptimisticLockOptions{.tables = ctx.tables});
                                 }};
  std::vector<BadInputCase> out;
  for (const auto* lock : {&row_lock, &optimistic}) {
    for (auto& row : bad_key_rows(*lock)) out.push_back(std::move(row));
    out.push_back(negative_timeout_row(*lock));
  }
  out.push_back(double_release_row(row_lock));
  ConditionalUpdate bad_op = sell_one();
  bad_op.where[0].op = "> 0 OR 1 =";
  ConditionalUpdate bad_column = sell_one();
  bad_column.set[0].column = "stock = 0, id";
  ConditionalUpdate no_set = sell_one();
  no_set.set.clear();
  ConditionalUpdate null_key = sell_one();
  null_key.key = Value();
  std::vector<BadInputCase> more = {
      {.name = "OptimisticReleaseAfterMove",
       .input = "release() of a moved-from optimistic lease",
       .setup =
           [](BadInputContext& ctx) {
             ctx.leases.push_back(*optimistic_of(ctx).try_acquire("held"));
           },
       .act =
           [](BadInputContext& ctx) {
             Lease moved = std::move(ctx.leases[0]);  // dropped unreleased: rolled back
             return std::string(to_string(ctx.leases[0].release()));
           },
       .code = Code::kInvalidArgument,
       .expect = "this lease handle is empty"},
      bad_row("RowOfTableNameWithSql", {"orders; DROP TABLE x", "id", Value(1)},
              Code::kInvalidArgument, "invalid"),
      bad_row("RowOfColumnWithQuote", {"orders", "id\" OR \"1", Value(1)}, Code::kInvalidArgument,
              "invalid"),
      bad_row("RowWithNullKey", {"orders", "id", Value()}, Code::kInvalidArgument,
              "the row's key value is NULL"),
      bad_row("RowThatDoesNotExist", {"orders", "id", Value(99)}, Code::kFailedPrecondition,
              "needs an existing row; insert it first"),
      bad_row("RowOfATableThatDoesNotExist", {"no_such_orders", "id", Value(1)},
              Code::kUndefinedTable, "does not exist"),
      bad_update("UpdateWithAnUnsupportedOperator", "where stock '> 0 OR 1 =' 0", bad_op,
                 "unsupported comparison"),
      bad_update("UpdateOfAColumnWithSql", "set 'stock = 0, id' += -1", bad_column, "invalid"),
      bad_update("UpdateWithNoAssignment", "set nothing", no_set, "needs at least one assignment"),
      bad_update("UpdateWithNullKey", "key NULL", null_key, "the key value is NULL"),
      {.name = "UpdateOfATableThatDoesNotExist",
       .input = "conditional_update of a missing table",
       .act =
           [](BadInputContext& ctx) {
             ConditionalUpdate u = sell_one();
             u.table = "no_such_orders";
             return std::string(to_string(conditional_update(ctx.conn, u)));
           },
       .code = Code::kUndefinedTable,
       .expect = "does not exist"},
      // Documented: the statement has run by the time the row count shows the key is not
      // unique; inside a transaction, rolling back undoes it (nothing changed, checked).
      {.name = "UpdateByANonUniqueColumnInALease",
       .input = "conditional_update keyed by a column two rows share, in a row-lock lease",
       .setup =
           [](BadInputContext& ctx) {
             create_orders(ctx);
             row_locks_of(ctx).try_acquire("orders")->release();  // the key's row exists
           },
       .act =
           [](BadInputContext& ctx) {
             auto lease = row_locks_of(ctx).try_acquire("orders");
             ConditionalUpdate u = sell_one();
             u.table = orders(ctx);
             u.key_column = "category";
             u.key = Value(7);
             return std::string(to_string(conditional_update(*lease->connection(), u)));
           },  // the lease is dropped unreleased by the throw: rolled back
       .code = Code::kInvalidArgument,
       .expect = "must be the table's primary key"},
  };
  for (auto& c : more) out.push_back(std::move(c));
  return out;
}

}  // namespace dblock::testing
