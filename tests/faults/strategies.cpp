// SPDX-License-Identifier: Apache-2.0
#include "strategies.hpp"

#include <stdexcept>

#include "dblock/optimistic_lock.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {

namespace {

// The rows of the unique-key lock.
std::vector<LockRow> lock_rows(Connection& conn, const TableNames& tables) {
  return list_locks(conn, tables);
}

// The rows of the semaphore's strategies: their permits.
std::vector<LockRow> permit_rows(Connection& conn, const TableNames& tables) {
  std::vector<LockRow> rows;
  for (auto& permit : list_permits(conn, tables)) rows.push_back(std::move(permit.lock));
  return rows;
}

// The writer's side of a ReadWriteLock, which it owns.
class WriterOf final : public Lock {
 public:
  WriterOf(ConnectionSource& source, const TableNames& tables)
      : rw_(source, ReadWriteLockOptions{.tables = tables}) {}
  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options) override {
    return rw_.writer().try_acquire(key, options);
  }
  std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                               const LockOptions& options) override {
    return rw_.writer().acquire(key, timeout, options);
  }
  using Lock::acquire;

 private:
  ReadWriteLock rw_;
};

}  // namespace

const std::vector<StrategyUnderTest>& fault_strategies() {
  static const std::vector<StrategyUnderTest> all = {
      {"unique_key",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         UniqueKeyLockOptions options;
         options.tables = tables;
         return std::make_unique<UniqueKeyLock>(source, options);
       },
       /*ends_with_ttl=*/true, /*exclusive=*/true, /*transactional=*/false, /*lock_row=*/true,
       "locks", /*global_tokens=*/false, /*reentrant=*/true, /*resends_lost_release=*/true,
       lock_rows, /*hands_over=*/true},
      // The same lock with fair waiting: waiters queue in lock_waiters and take turns.
      {"unique_key_fair",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         UniqueKeyLockOptions options;
         options.tables = tables;
         options.fair = true;
         return std::make_unique<UniqueKeyLock>(source, options);
       },
       /*ends_with_ttl=*/true, /*exclusive=*/true, /*transactional=*/false, /*lock_row=*/true,
       "locks", /*global_tokens=*/false, /*reentrant=*/true, /*resends_lost_release=*/true,
       lock_rows, /*hands_over=*/true, /*queues=*/true},
      {"row_lock",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         RowLockOptions options;
         options.tables = tables;
         return std::make_unique<RowLock>(source, options);
       },
       /*ends_with_ttl=*/false, /*exclusive=*/true, /*transactional=*/true, /*lock_row=*/true,
       "row_locks"},
      {"optimistic",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         OptimisticLockOptions options;
         options.tables = tables;
         return std::make_unique<OptimisticLock>(source, options);
       },
       /*ends_with_ttl=*/false, /*exclusive=*/false, /*transactional=*/true, /*lock_row=*/true,
       "versions", /*global_tokens=*/false, /*reentrant=*/false},
      {"session_lock",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         SessionLockOptions options;
         options.tables = tables;
         return std::make_unique<SessionLock>(source, options);
       },
       /*ends_with_ttl=*/false, /*exclusive=*/true, /*transactional=*/false, /*lock_row=*/false,
       /*table=*/"", /*global_tokens=*/true},
      // A counting semaphore with one permit: mutual exclusion by a permit row with a TTL.
      {"semaphore",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         SemaphoreOptions options;
         options.tables = tables;
         return std::make_unique<Semaphore>(source, 1, options);
       },
       /*ends_with_ttl=*/true, /*exclusive=*/true, /*transactional=*/false, /*lock_row=*/true,
       "semaphore_permits", /*global_tokens=*/false, /*reentrant=*/false,
       /*resends_lost_release=*/false, permit_rows},
      // The writer's side of a reader-writer lock: slot 0 of the key's permits, then the readers
      // drained (none here: its readers are covered by the integration and model tests).
      {"rw_writer",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         return std::make_unique<WriterOf>(source, tables);
       },
       /*ends_with_ttl=*/true, /*exclusive=*/true, /*transactional=*/false, /*lock_row=*/true,
       "semaphore_permits", /*global_tokens=*/false, /*reentrant=*/false,
       /*resends_lost_release=*/false, permit_rows},
  };
  return all;
}

const StrategyUnderTest& strategy_named(const std::string& name) {
  for (const auto& s : fault_strategies()) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("unknown lock strategy '" + name + "'");
}

}  // namespace dblock::testing
