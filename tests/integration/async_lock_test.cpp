// SPDX-License-Identifier: Apache-2.0
// AsyncLock (dblock/async_lock.hpp) over a UniqueKeyLock, on every pair: a free key through a
// future, a callback and co_await, with the first try in the caller and on the AsyncLock's
// threads; a held key taken once its holder releases, with a higher token, by the asking
// thread's owner; the timeout, a stop request and the AsyncLock's destruction ending an acquire
// with nothing; a try's error reaching the future; and five hundred pending acquires of held keys
// on two threads, which add no thread and all end.
#include "dblock/async_lock.hpp"

#include <dirent.h>

#include <atomic>
#include <coroutine>
#include <future>
#include <thread>
#include <vector>

#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

using std::chrono::seconds;

// The threads of this process now.
int threads_now() {
  int n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++n;
    }
    ::closedir(dir);
  }
  return n;
}

// The smallest coroutine that awaits: it starts at once and keeps what it awaited in `out`.
struct Task {
  struct promise_type {
    Task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

Task take(AsyncLock& async, std::string key, LockOptions options,
          std::promise<std::pair<std::optional<std::int64_t>, std::thread::id>>& out) {
  std::optional<Lease> lease = co_await async.acquiring(key, seconds(10), options);
  out.set_value({lease ? std::optional<std::int64_t>(lease->fencing_token()) : std::nullopt,
                 std::this_thread::get_id()});
}

class AsyncLockTest : public MigratedLockTest<UniqueKeyLock, UniqueKeyLockOptions> {
 protected:
  AsyncLockTest() : MigratedLockTest("al", 8) {}
};

TEST_P(AsyncLockTest, AFreeKeyThroughAFutureACallbackAndCoAwait) {
  for (const bool in_caller : {true, false}) {
    SCOPED_TRACE(in_caller ? "first try in the caller" : "first try on the AsyncLock's threads");
    AsyncLock async(*lock_, {.threads = 2, .backoff = {}, .first_try_in_caller = in_caller});
    std::optional<Lease> lease = async.acquire("future", seconds(5), as("a")).get();
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->owner(), Owner::named("a"));
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);

    std::promise<std::optional<Lease>> called;
    async.acquire("callback", seconds(5), as("a"),
                  [&](std::optional<Lease> l, std::exception_ptr error) {
                    EXPECT_FALSE(error);
                    called.set_value(std::move(l));
                  });
    lease = called.get_future().get();
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);

    std::promise<std::pair<std::optional<std::int64_t>, std::thread::id>> awaited;
    take(async, "awaited", as("a"), awaited);
    const auto [token, resumed_on] = awaited.get_future().get();
    EXPECT_TRUE(token);
    // Taken by the first try in the caller, the coroutine never left this thread.
    EXPECT_EQ(resumed_on == std::this_thread::get_id(), in_caller);
    EXPECT_EQ(async.pending(), 0u);
  }
}

// A key held by another owner is taken once the holder releases it, by polling: with a higher
// token, owned by the thread that asked (not the AsyncLock's thread that tried).
TEST_P(AsyncLockTest, AHeldKeyIsTakenAfterItsRelease) {
  auto holder = lock_->try_acquire("k", as("holder"));
  ASSERT_TRUE(holder);
  AsyncLock async(*lock_, {.threads = 1, .backoff = {}, .first_try_in_caller = true});
  auto waiting = async.acquire("k", seconds(10));
  EXPECT_EQ(waiting.wait_for(milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(async.pending(), 1u);
  const std::int64_t old_token = holder->fencing_token();
  EXPECT_EQ(holder->release(), ReleaseOutcome::kReleased);
  std::optional<Lease> lease = waiting.get();
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->fencing_token(), old_token);
  EXPECT_EQ(lease->owner(), Owner::current_thread());
  auto again = lock_->try_acquire("k");  // this thread's owner: a re-entry
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fencing_token(), lease->fencing_token());
  EXPECT_EQ(again->release(), ReleaseOutcome::kDecremented);
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

// A pending acquire whose waits are long (5 s) takes a key at once when it is released: through
// the same lock object on every pair, and on PostgreSQL through another one (another process's,
// heard by notification); with the lock's notifications off it waits out its backoff.
TEST_P(AsyncLockTest, AReleaseNudgesAPendingAcquire) {
  const AsyncLockOptions slow{.threads = 1,
                              .backoff = {.initial = milliseconds(5000),
                                          .max_delay = milliseconds(5000),
                                          .min_sleep = milliseconds(5000)},
                              .first_try_in_caller = true};
  UniqueKeyLock elsewhere(*pool_, {.tables = tables_});
  UniqueKeyLock deaf(*pool_, {.tables = tables_, .notify = false});
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  struct Case {
    const char* what;
    UniqueKeyLock* waits_on;
    UniqueKeyLock* holds_on;
    bool nudged;
  };
  for (const Case& c :
       {Case{"released through the same lock object", lock_.get(), lock_.get(), true},
        Case{"released through another lock object", lock_.get(), &elsewhere, pg},
        Case{"notifications off", &deaf, &deaf, false}}) {
    SCOPED_TRACE(c.what);
    auto holder = c.holds_on->try_acquire("k", as("holder"));
    ASSERT_TRUE(holder);
    AsyncLock async(*c.waits_on, slow);
    auto waiting = async.acquire("k", seconds(20), as("waiter"));
    std::this_thread::sleep_for(milliseconds(200));  // tried once, waiting 5 s
    const auto released = Clock::now();
    EXPECT_EQ(holder->release(), ReleaseOutcome::kReleased);
    const bool soon = waiting.wait_for(milliseconds(2000)) == std::future_status::ready;
    EXPECT_EQ(soon, c.nudged) << since(released).count() << " ms after the release";
    std::optional<Lease> lease = waiting.get();
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
  }
}

TEST_P(AsyncLockTest, TheTimeoutAStopAndTheDestructionEndWithNothing) {
  auto holder = lock_->try_acquire("k", as("holder"));
  ASSERT_TRUE(holder);
  std::future<std::optional<Lease>> stopped;
  std::future<std::optional<Lease>> abandoned;
  {
    // Waits of 5 s: the timeout and the stop must not wait for a try.
    AsyncLock async(*lock_, {.threads = 2,
                             .backoff = {.initial = milliseconds(5000),
                                         .max_delay = milliseconds(5000),
                                         .min_sleep = milliseconds(5000)},
                             .first_try_in_caller = false});
    const auto start = Clock::now();
    EXPECT_FALSE(async.acquire("k", milliseconds(300), as("b")).get());
    EXPECT_GE(since(start), milliseconds(300));
    EXPECT_FALSE(async.acquire("k", milliseconds(0), as("b")).get()) << "one try";

    std::stop_source stop;
    stopped = async.acquire("k", seconds(30), as("b"), stop.get_token());
    abandoned = async.acquire("k", seconds(30), as("c"));
    std::this_thread::sleep_for(milliseconds(100));
    stop.request_stop();
    EXPECT_EQ(stopped.wait_for(milliseconds(200)), std::future_status::ready)
        << "a stop request does not end the acquire at once";
    EXPECT_EQ(abandoned.wait_for(milliseconds(0)), std::future_status::timeout);
  }
  EXPECT_FALSE(stopped.get());
  ASSERT_EQ(abandoned.wait_for(milliseconds(0)), std::future_status::ready)
      << "the AsyncLock's destruction ended it";
  EXPECT_FALSE(abandoned.get());
  EXPECT_EQ(holder->release(), ReleaseOutcome::kReleased);
}

TEST_P(AsyncLockTest, ATrysErrorReachesTheCallerAndBadInputIsRefused) {
  AsyncLock async(*lock_, {.threads = 1, .backoff = {}, .first_try_in_caller = false});
  // An empty key: the try throws, and the callback gets the error (rethrown there, on the
  // AsyncLock's thread).
  std::promise<ErrorCode> code;
  async.acquire("", seconds(1), {}, [&](std::optional<Lease> lease, std::exception_ptr error) {
    EXPECT_FALSE(lease);
    try {
      if (error) std::rethrow_exception(error);
      code.set_value(ErrorCode::kOther);
    } catch (const Error& e) {
      code.set_value(e.code());
    }
  });
  EXPECT_EQ(code.get_future().get(), ErrorCode::kInvalidArgument);
#if !defined(__SANITIZE_THREAD__)
  // The same through a future, rethrown in this thread. Not under ThreadSanitizer: the exception
  // object's reference count lives in the uninstrumented C++ runtime, so its deletion on the
  // AsyncLock's thread after this thread read it is reported as a race.
  auto bad = async.acquire("", seconds(1));
  expect_error([&] { (void)bad.get(); }, ErrorCode::kInvalidArgument, "key", "an empty key");
#endif
  expect_error([&] { (void)async.acquire("k", milliseconds(-1)); }, ErrorCode::kInvalidArgument,
               "negative", "a negative timeout");
  expect_error([&] { AsyncLock none(*lock_, {.threads = 0}); }, ErrorCode::kInvalidArgument,
               "1 to 64 threads", "no threads");
}

// Five hundred acquires of keys another owner holds wait on the AsyncLock's two threads: the
// process gains no thread beyond those two and the lock's listener, every acquire ends (here by its
// timeout), and a key freed meanwhile is taken.
TEST_P(AsyncLockTest, ManyPendingOnTwoThreadsAddNoThread) {
  constexpr int kKeys = 500;  // the benchmark waits for 10,000
  std::vector<Lease> held;
  held.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    auto lease = lock_->try_acquire("k" + std::to_string(i), as("holder", seconds(60), false));
    ASSERT_TRUE(lease);
    held.push_back(std::move(*lease));
  }
  const int before = threads_now();
  std::atomic<int> ended{0};
  std::atomic<int> taken{0};
  {
    AsyncLock async(*lock_, {.threads = 2,
                             .backoff = {.initial = milliseconds(200),
                                         .max_delay = milliseconds(1000),
                                         .min_sleep = milliseconds(100)},
                             .first_try_in_caller = false});
    const auto ask = [&](int i) {
      async.acquire("k" + std::to_string(i), seconds(2), as("waiter", seconds(60), false),
                    [&](std::optional<Lease> lease, std::exception_ptr error) {
                      EXPECT_FALSE(error);
                      if (lease) {
                        ++taken;
                        lease->release();
                      }
                      ++ended;
                    });
    };
    for (int i = 0; i < 10; ++i) ask(i);
    std::this_thread::sleep_for(milliseconds(300));  // each tried, and watching its key
    const int with_ten = threads_now();
    for (int i = 10; i < kKeys; ++i) ask(i);
    EXPECT_EQ(async.pending(), static_cast<std::size_t>(kKeys));
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(threads_now(), with_ten) << "more pending acquires, more threads";
    // The AsyncLock's two, on PostgreSQL the lock's one listening thread (a blocking waiter
    // starts it too), whose notifications nudge the pending acquires, and under ThreadSanitizer
    // its runtime's own.
    EXPECT_LE(with_ten - before, 4);
    EXPECT_EQ(held[7].release(), ReleaseOutcome::kReleased);
    for (int i = 0; i < 100 && ended.load() < kKeys; ++i) {
      std::this_thread::sleep_for(milliseconds(100));
    }
    EXPECT_EQ(ended.load(), kKeys) << "pending acquires that never ended";
    EXPECT_EQ(taken.load(), 1) << "the freed key, and only it";
  }
  for (Lease& lease : held) {
    if (lease) lease.release();
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, AsyncLockTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
