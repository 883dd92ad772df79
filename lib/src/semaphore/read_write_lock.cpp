// SPDX-License-Identifier: Apache-2.0
#include "dblock/read_write_lock.hpp"

#include <algorithm>
#include <chrono>

#include "clock.hpp"
#include "dblock/error.hpp"
#include "observed_acquire.hpp"
#include "retry_until.hpp"
#include "semaphore/permits.hpp"
#include "strategy_rules.hpp"

namespace dblock {

namespace {

using std::chrono::milliseconds;

constexpr int kWriterSlot = 0;

// Gives `lease` back, errors swallowed: it then ends by its TTL.
void give_back(Lease& lease) noexcept {
  try {
    lease.release();
  } catch (const Error&) {
    // Ends by its TTL.
  }
}

// Shared leases: a reader slot, kept only when no writer has slot 0 once it is taken.
class Reader final : public Lock {
 public:
  Reader(std::shared_ptr<detail::SemaphoreCore> permits, BackoffPolicy backoff)
      : permits_(std::move(permits)), backoff_(backoff) {}

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options) override {
    return detail::observed_acquire("reader", key, options, std::nullopt,
                                    [&] { return try_once(key, options); });
  }

  std::optional<Lease> acquire(std::string_view key, milliseconds timeout,
                               const LockOptions& options) override {
    return detail::observed_acquire("reader", key, options, timeout, [&] {
      const bool forever = detail::is_forever_wait(timeout);
      Backoff backoff(backoff_);
      detail::PermitWait wait(*permits_, std::string(key));
      auto got = detail::retry_until(
          detail::Clock::system(), timeout, forever, backoff,
          [&] { return try_once(key, options); }, [&](milliseconds d) { wait.pause(d); });
      if (got) wait.took();  // a writer's release frees the key for every reader
      return got;
    });
  }
  using Lock::acquire;

 private:
  std::optional<Lease> try_once(std::string_view key, const LockOptions& options) {
    auto lease = detail::take_permit(permits_, key, milliseconds(0), options);
    if (!lease) return lease;  // every reader slot held, or a writer seen at slot 0
    // Taken: now look at slot 0. A writer that took it before this read waits for this reader;
    // one that took it before the permit was taken is seen here. The read share-locks slot 0's
    // row, expired or not: a writer whose fenced transaction is open (fence() locks that row
    // exclusively) is waited for, so no reader gets in before a paused writer's commit ended.
    if (detail::live_permits(*permits_, lease->key(), kWriterSlot, kWriterSlot,
                             detail::RowLocks::kShared) == 0) {
      return lease;
    }
    give_back(*lease);
    return std::nullopt;
  }

  std::shared_ptr<detail::SemaphoreCore> permits_;
  BackoffPolicy backoff_;
};

// Exclusive leases: slot 0, then the readers already in drained.
class Writer final : public Lock {
 public:
  Writer(std::shared_ptr<detail::SemaphoreCore> permits, BackoffPolicy backoff)
      : permits_(std::move(permits)), backoff_(backoff) {}

  std::optional<Lease> try_acquire(std::string_view key, const LockOptions& options) override {
    return detail::observed_acquire("writer", key, options, std::nullopt,
                                    [&] { return take(key, milliseconds(0), options); });
  }

  std::optional<Lease> acquire(std::string_view key, milliseconds timeout,
                               const LockOptions& options) override {
    return detail::observed_acquire("writer", key, options, timeout,
                                    [&] { return take(key, timeout, options); });
  }
  using Lock::acquire;

 private:
  // Slot 0, then the readers already in drained, within `timeout`.
  std::optional<Lease> take(std::string_view key, milliseconds timeout,
                            const LockOptions& options) {
    const bool forever = detail::is_forever_wait(timeout);
    auto& clock = detail::Clock::system();
    const auto deadline = forever ? detail::Clock::time_point::max() : clock.now() + timeout;
    const auto left = [&] {
      return forever ? milliseconds::max()
                     : std::max(milliseconds(0),
                                std::chrono::ceil<milliseconds>(deadline - clock.now()));
    };
    for (;;) {
      auto lease = detail::take_permit(permits_, key, left(), options);
      if (!lease) return lease;
      // Slot 0 is ours: no reader gets in from now on. Wait for those already in: each
      // reader's release wakes this writer where releases notify.
      Backoff backoff(backoff_);
      detail::PermitWait wait(*permits_, lease->key());
      const bool drained = detail::retry_until(
          clock, left(), forever, backoff,
          // Every slot past 0: readers let in under a higher limit count too. Their rows are
          // locked exclusively, expired or not: a reader's fenced transaction (a share lock on
          // its row) is waited for.
          [&] {
            return detail::live_permits(*permits_, lease->key(), 1, Semaphore::kMaxPermits,
                                        detail::RowLocks::kExclusive) == 0;
          },
          [&](milliseconds d) { wait.pause(d); });
      if (drained && !lease->lost()) return lease;
      give_back(*lease);
      // Out of time, or slot 0 was lost while the readers drained: another writer may have it.
      if (!drained || left() == milliseconds(0)) return std::nullopt;
    }
  }

  std::shared_ptr<detail::SemaphoreCore> permits_;
  BackoffPolicy backoff_;
};

}  // namespace

struct detail::ReadWriteLockCore {
  ReadWriteLockCore(ConnectionSource& source, ReadWriteLockOptions options) {
    const int n = options.max_readers;
    if (n < 1 || n >= Semaphore::kMaxPermits) {
      throw Error(ErrorCode::kInvalidArgument, "a reader-writer lock needs max_readers from 1 to " +
                                                   std::to_string(Semaphore::kMaxPermits - 1) +
                                                   "; got " + std::to_string(n));
    }
    const SemaphoreOptions permits{options.tables, options.backoff, options.contention_retries,
                                   options.notify};
    // The key's limit is max_readers + 1: slot 0 is the writer's. Both listen on one session.
    auto readers = detail::make_permits(source, {n + 1, 1, n, kWriterSlot, true}, permits);
    auto writers = detail::make_permits(source, {n + 1, kWriterSlot, kWriterSlot, -1, true},
                                        permits, readers.get());
    reader.emplace(std::move(readers), options.backoff);
    writer.emplace(std::move(writers), options.backoff);
  }

  std::optional<Reader> reader;
  std::optional<Writer> writer;
};

ReadWriteLock::ReadWriteLock(ConnectionSource& source, ReadWriteLockOptions options)
    : impl_(std::make_unique<detail::ReadWriteLockCore>(source, std::move(options))) {}

ReadWriteLock::~ReadWriteLock() = default;

Lock& ReadWriteLock::reader() noexcept { return *impl_->reader; }

Lock& ReadWriteLock::writer() noexcept { return *impl_->writer; }

}  // namespace dblock
