// SPDX-License-Identifier: Apache-2.0
// The bad-input rows of the counting semaphore and the reader-writer lock built on it
// (bad_input.hpp): bad keys, TTLs and timeouts, a permit count or max_readers out of range, a
// limit that conflicts with the key's stored one, and a permit released twice. Each row's check
// that nothing changed also shows that a refused input took no permit and stored no limit.
#include "bad_input.hpp"
#include "bad_input_rows.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/semaphore.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;
using Code = ErrorCode;

namespace {

Semaphore semaphore_of(BadInputContext& ctx, int permits = 3) {
  return Semaphore(ctx.pool, permits, {.tables = ctx.tables});
}

BadInputCase bad_permits(const std::string& name, int permits) {
  return {.name = "Semaphore" + name,
          .input = "Semaphore with " + std::to_string(permits) + " permits",
          .act =
              [permits](BadInputContext& ctx) {
                return outcome(semaphore_of(ctx, permits).try_acquire("k"));
              },
          .code = Code::kInvalidArgument,
          .expect = "a semaphore needs 1 to 1000 permits"};
}

BadInputCase bad_max_readers(const std::string& name, int max_readers) {
  return {.name = "ReadWriteLock" + name,
          .input = "ReadWriteLock with max_readers " + std::to_string(max_readers),
          .act =
              [max_readers](BadInputContext& ctx) {
                ReadWriteLock rw(ctx.pool, {.tables = ctx.tables, .max_readers = max_readers});
                return outcome(rw.reader().try_acquire("k"));
              },
          .code = Code::kInvalidArgument,
          .expect = "a reader-writer lock needs max_readers from 1 to 999"};
}

}  // namespace

std::vector<BadInputCase> semaphore_cases() {
  const LockUnderTest semaphore{"Semaphore", "Semaphore", [](BadInputContext& ctx) {
                                  return std::make_unique<Semaphore>(
                                      ctx.pool, 3, SemaphoreOptions{.tables = ctx.tables});
                                }};
  std::vector<BadInputCase> out = bad_key_rows(semaphore);
  out.push_back(negative_timeout_row(semaphore));
  out.push_back(double_release_row(semaphore));
  std::vector<BadInputCase> more = {
      bad_permits("NoPermits", 0),
      bad_permits("NegativePermits", -3),
      bad_permits("TooManyPermits", Semaphore::kMaxPermits + 1),
      {.name = "SemaphoreZeroTtl",
       .input = "Semaphore::try_acquire with ttl 0",
       .act =
           [](BadInputContext& ctx) {
             LockOptions o;
             o.ttl = milliseconds(0);
             return outcome(semaphore_of(ctx).try_acquire("k", o));
           },
       .code = Code::kInvalidArgument,
       .expect = "the permit TTL"},
      // The key's limit is 3 (stored by the setup's permit); a Semaphore of 5 takes nothing.
      {.name = "SemaphoreConflictingLimit",
       .input = "Semaphore of 5 permits on a key stored with 3",
       .setup =
           [](BadInputContext& ctx) {
             ctx.leases.push_back(
                 *semaphore_of(ctx, 3).try_acquire("jobs", BadInputContext::as("a")));
           },
       .act =
           [](BadInputContext& ctx) {
             return outcome(semaphore_of(ctx, 5).try_acquire("jobs", BadInputContext::as("b")));
           },
       .code = Code::kFailedPrecondition,
       .expect = "call set_limit on a Semaphore with the new one"},
      bad_max_readers("NoReaders", 0),
      bad_max_readers("TooManyReaders", Semaphore::kMaxPermits),
      {.name = "ReadWriteLockEmptyKey",
       .input = "ReadWriteLock writer().try_acquire of an empty key",
       .act =
           [](BadInputContext& ctx) {
             ReadWriteLock rw(ctx.pool, {.tables = ctx.tables});
             return outcome(rw.writer().try_acquire(""));
           },
       .code = Code::kInvalidArgument,
       .expect = "the lock key is empty"},
      // The key's limit is 101 (100 readers and the writer); a lock of 5 readers takes nothing.
      {.name = "ReadWriteLockConflictingMaxReaders",
       .input = "ReadWriteLock of max_readers 5 on a key stored with 100",
       .setup =
           [](BadInputContext& ctx) {
             ReadWriteLock rw(ctx.pool, {.tables = ctx.tables});
             ctx.leases.push_back(*rw.reader().try_acquire("doc", BadInputContext::as("a")));
           },
       .act =
           [](BadInputContext& ctx) {
             ReadWriteLock rw(ctx.pool, {.tables = ctx.tables, .max_readers = 5});
             return outcome(rw.writer().try_acquire("doc", BadInputContext::as("b")));
           },
       .code = Code::kFailedPrecondition,
       .expect = "call set_limit on a Semaphore of max_readers + 1 permits"},
  };
  for (auto& c : more) out.push_back(std::move(c));
  return out;
}

}  // namespace dblock::testing
