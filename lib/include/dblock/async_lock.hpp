// SPDX-License-Identifier: Apache-2.0
/// @file
/// Acquires that wait without a thread each: a std::future, a callback, or C++20 `co_await`.
///
/// An AsyncLock runs the tries of any Lock (a UniqueKeyLock, a Semaphore, a RowLock, ...) on a
/// few threads of its own. A pending acquire is an entry in a timetable, not a sleeping thread:
/// one process can wait for thousands of keys at once with `threads` threads, each try a short
/// statement on a pooled connection. Between tries a pending acquire waits by the policy's
/// backoff (full jitter), and where the lock hears releases (Lock::watch_releases: a
/// UniqueKeyLock with `notify`) a release that would wake a blocking waiter makes its next try
/// due at once (docs/locks/async.md). The lease is the same Lease a blocking acquire gives, owned
/// by the thread that asked (or LockOptions::owner), not by the thread that tried.
///
///   dblock::AsyncLock async(locks);                      // locks: any dblock::Lock
///   std::future<std::optional<dblock::Lease>> f = async.acquire("report", 30s);
///   async.acquire("report", 30s, {}, [](std::optional<dblock::Lease> lease,
///                                       std::exception_ptr error) { ... });
///   std::optional<dblock::Lease> lease = co_await async.acquiring("report", 30s);
///
/// The first try runs in the calling thread unless AsyncLockOptions::first_try_in_caller is
/// false (a free key is then taken with no thread switch, at the cost of one round trip in the
/// caller); every later try, and every completion after it, runs on one of the AsyncLock's
/// threads: a callback is called there, a coroutine resumes there, and the lock's observer events
/// fire there. A callback must not throw (what it throws is logged and dropped) and should hand
/// long work elsewhere, since it delays the other pending acquires' tries.
///
/// Ends of a pending acquire: the lease; nothing when `timeout` passes, when `stop` (the call's
/// std::stop_token) is requested, or when the AsyncLock is destroyed; or the error a try threw
/// (a future rethrows it from get(), `co_await` from the await, a callback gets it as
/// `error`). A stop request ends a pending acquire at once (on one of the AsyncLock's threads).
///
/// Thread-safety: all members may be called from any thread. The Lock must outlive the
/// AsyncLock; destroying the AsyncLock ends every pending acquire (with nothing) and joins its
/// threads, after the tries in flight finish; it must not be destroyed from one of its own
/// callbacks. After fork() the child has none of the AsyncLock's threads: there the inherited
/// AsyncLock refuses to start an acquire (Error(kFailedPrecondition)) and its destruction leaves
/// the parent's state alone; make a new AsyncLock in the child.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "dblock/backoff.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"

namespace dblock {

struct AsyncLockOptions {
  /// Threads that run the tries; 1 to 64.
  int threads = 2;
  /// How long a pending acquire waits between tries. Where the lock hears no releases, its
  /// max_delay bounds how late a freed key is noticed; everywhere it sets the load: each pending
  /// acquire sends about 2 / (min_sleep + max_delay) statements per second once its wait has
  /// grown.
  BackoffPolicy backoff{};
  /// The first try in the calling thread (true) or on the AsyncLock's threads (false: the call
  /// returns at once, for callers that must never block, such as an event loop's thread).
  bool first_try_in_caller = true;
};

class DBLOCK_EXPORT AsyncLock {
 public:
  /// What a callback gets: the lease, or nothing (timeout, stop, destruction), or the error a
  /// try threw (then no lease).
  using Callback = std::function<void(std::optional<Lease> lease, std::exception_ptr error)>;

  /// Throws Error(kInvalidArgument) for a thread count out of range.
  explicit AsyncLock(Lock& lock, AsyncLockOptions options = {});
  ~AsyncLock();
  AsyncLock(const AsyncLock&) = delete;
  AsyncLock& operator=(const AsyncLock&) = delete;

  /// Tries `key` until it is taken or `timeout` passes (Lock::acquire's timeout: 0 is one try,
  /// a century or more is no limit), and calls `done` once with the end.
  void acquire(std::string_view key, std::chrono::milliseconds timeout, const LockOptions& options,
               Callback done, std::stop_token stop = {});
  /// The same, ending in a future.
  std::future<std::optional<Lease>> acquire(std::string_view key, std::chrono::milliseconds timeout,
                                            const LockOptions& options = {},
                                            std::stop_token stop = {});

  /// `co_await async.acquiring(key, timeout)`: the coroutine resumes on one of the AsyncLock's
  /// threads (or in the caller, when the first try in the caller took the key) with the lease or
  /// nothing, or the await throws a try's error.
  class Acquiring {
   public:
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> waiting);
    std::optional<Lease> await_resume();

   private:
    friend class AsyncLock;
    Acquiring(AsyncLock& lock, std::string_view key, std::chrono::milliseconds timeout,
              const LockOptions& options, std::stop_token stop)
        : lock_(&lock), key_(key), timeout_(timeout), options_(options), stop_(std::move(stop)) {}
    AsyncLock* lock_;
    std::string key_;
    std::chrono::milliseconds timeout_;
    LockOptions options_;
    std::stop_token stop_;
    std::optional<Lease> lease_;
    std::exception_ptr error_;
  };
  Acquiring acquiring(std::string_view key, std::chrono::milliseconds timeout,
                      const LockOptions& options = {}, std::stop_token stop = {}) {
    return Acquiring(*this, key, timeout, options, std::move(stop));
  }

  /// Acquires started and not yet ended.
  std::size_t pending() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  int made_in_;  // the process that made it (fork())
};

}  // namespace dblock
