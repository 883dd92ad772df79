// SPDX-License-Identifier: Apache-2.0
// The bad-input rows of the session lock (bad_input.hpp): bad keys and timeouts, a lease
// released twice, and a source behind a transaction pooler. A session lock writes no row, so
// each row's check that nothing changed also shows that a refused input took no lock row.
#include "bad_input.hpp"
#include "dblock/open.hpp"
#include "dblock/session_lock.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;
using Code = ErrorCode;

namespace {

std::string outcome(const std::optional<Lease>& lease) {
  return lease ? "acquired" : "not acquired";
}

SessionLock session_locks_of(BadInputContext& ctx) {
  return SessionLock(ctx.pool, {.tables = ctx.tables});
}

BadInputCase bad_key(const std::string& name, const std::string& key, const std::string& fragment) {
  return {
      .name = "SessionLock" + name,
      .input = "SessionLock::try_acquire of a bad key",
      .act =
          [key](BadInputContext& ctx) { return outcome(session_locks_of(ctx).try_acquire(key)); },
      .code = Code::kInvalidArgument,
      .expect = fragment};
}

}  // namespace

std::vector<BadInputCase> session_cases() {
  return {
      bad_key("EmptyKey", "", "the lock key is empty"),
      bad_key("KeyOver255Characters", std::string(256, 'k'), "the limit is 255"),
      bad_key("KeyInvalidUtf8", "\xff\xfe", "not valid UTF-8"),
      {.name = "SessionLockNegativeTimeout",
       .input = "SessionLock::acquire with timeout -1 ms",
       .act =
           [](BadInputContext& ctx) {
             return outcome(session_locks_of(ctx).acquire("k", milliseconds(-1)));
           },
       .code = Code::kInvalidArgument,
       .expect = "use 0 for a single try"},
      {.name = "SessionLockDoubleRelease",
       .input = "release() of a session-lock lease twice",
       .setup =
           [](BadInputContext& ctx) {
             ctx.leases.push_back(*session_locks_of(ctx).try_acquire("held"));
             ctx.leases[0].release();
           },
       .act = [](BadInputContext& ctx) { return std::string(to_string(ctx.leases[0].release())); },
       .code = Code::kInvalidArgument,
       .expect = "this lease handle is empty"},
      {.name = "SessionLockBehindATransactionPooler",
       .input = "SessionLock over a pool with dedicated_sessions = false (pool_mode=transaction)",
       .act =
           [](BadInputContext& ctx) {
             auto pooled = open_pool(DatabaseUrl::parse(ctx.url),
                                     {.max_size = 1, .dedicated_sessions = false});
             SessionLock refused(*pooled, {.tables = ctx.tables});
             return outcome(refused.try_acquire("k"));
           },
       .code = Code::kFailedPrecondition,
       .expect = "use UniqueKeyLock there"},
  };
}

}  // namespace dblock::testing
