// SPDX-License-Identifier: Apache-2.0
// The bad-input rows of the counting semaphore and the reader-writer lock built on it
// (bad_input.hpp): bad keys, TTLs and timeouts, a permit count or max_readers out of range, a
// limit that conflicts with the key's stored one, and a permit released twice. Each row's check
// that nothing changed also shows that a refused input took no permit and stored no limit.
#include "bad_input.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/semaphore.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;
using Code = ErrorCode;

namespace {

std::string outcome(const std::optional<Lease>& lease) {
  return lease ? "acquired" : "not acquired";
}

Semaphore semaphore_of(BadInputContext& ctx, int permits = 3) {
  return Semaphore(ctx.pool, permits, {.tables = ctx.tables});
}

BadInputCase bad_key(const std::string& name, const std::string& key, const std::string& fragment) {
  return {
      .name = "Semaphore" + name,
      .input = "Semaphore::try_acquire of a bad key",
      .act = [key](BadInputContext& ctx) { return outcome(semaphore_of(ctx).try_acquire(key)); },
      .code = Code::kInvalidArgument,
      .expect = fragment};
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
  return {
      bad_key("EmptyKey", "", "the lock key is empty"),
      bad_key("KeyOver255Characters", std::string(256, 'k'), "the limit is 255"),
      bad_key("KeyInvalidUtf8", "\xff\xfe", "not valid UTF-8"),
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
      {.name = "SemaphoreNegativeTimeout",
       .input = "Semaphore::acquire with timeout -1 ms",
       .act =
           [](BadInputContext& ctx) {
             return outcome(semaphore_of(ctx).acquire("k", milliseconds(-1)));
           },
       .code = Code::kInvalidArgument,
       .expect = "use 0 for a single try"},
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
      {.name = "SemaphoreDoubleRelease",
       .input = "release() of a permit twice",
       .setup =
           [](BadInputContext& ctx) {
             ctx.leases.push_back(*semaphore_of(ctx).try_acquire("held", BadInputContext::as("a")));
             ctx.leases[0].release();
           },
       .act = [](BadInputContext& ctx) { return std::string(to_string(ctx.leases[0].release())); },
       .code = Code::kInvalidArgument,
       .expect = "this lease handle is empty"},
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
}

}  // namespace dblock::testing
