// SPDX-License-Identifier: Apache-2.0
// The bad-input rows of the session lock (bad_input.hpp): bad keys and timeouts, a lease
// released twice, and a source behind a transaction pooler. A session lock writes no row, so
// each row's check that nothing changed also shows that a refused input took no lock row.
#include "bad_input.hpp"
#include "bad_input_rows.hpp"
#include "dblock/open.hpp"
#include "dblock/session_lock.hpp"

namespace dblock::testing {

std::vector<BadInputCase> session_cases() {
  const LockUnderTest session{"SessionLock", "SessionLock", [](BadInputContext& ctx) {
                                return std::make_unique<SessionLock>(
                                    ctx.pool, SessionLockOptions{.tables = ctx.tables});
                              }};
  std::vector<BadInputCase> out = bad_key_rows(session);
  out.push_back(negative_timeout_row(session));
  out.push_back(double_release_row(session));
  out.push_back(
      {.name = "SessionLockBehindATransactionPooler",
       .input = "SessionLock over a pool with dedicated_sessions = false (pool_mode=transaction)",
       .act =
           [](BadInputContext& ctx) {
             auto pooled = open_pool(DatabaseUrl::parse(ctx.url),
                                     {.max_size = 1, .dedicated_sessions = false});
             SessionLock refused(*pooled, {.tables = ctx.tables});
             return outcome(refused.try_acquire("k"));
           },
       .code = ErrorCode::kFailedPrecondition,
       .expect = "use UniqueKeyLock there"});
  return out;
}

}  // namespace dblock::testing
