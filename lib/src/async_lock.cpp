// SPDX-License-Identifier: Apache-2.0
// AsyncLock: a timetable of pending acquires and a few threads that run their tries. Purpose,
// example and thread-safety in dblock/async_lock.hpp.
//
// Each pending acquire is an entry keyed by the time of its next try; a thread takes the earliest
// entry that is due, runs one try_acquire without the timetable's mutex, and either ends the entry
// (a lease, the timeout, a stop request, an error) or puts it back at its next backoff time. The
// attempt count is kept per entry and the random draws come from one generator under the mutex,
// so an entry costs its key, its options and its callback, not a Backoff's generator state.
//
// After its first try that found the key taken, an entry watches the key's releases where the
// lock hears them (Lock::watch_releases): a release that would wake a sleeping waiter nudges the
// entry's next try to now instead. The nudge runs under the lock's listener mutex and takes the
// timetable's, so nothing here calls into the lock (watch, rearm, or an entry's end) with the
// timetable's mutex held.
#include "dblock/async_lock.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "dblock/error.hpp"
#include "log.hpp"
#include "strategy_rules.hpp"

namespace dblock {

namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::string key;
  LockOptions options;
  Clock::time_point deadline;  // the last try is due then (max(): no limit)
  int attempts = 0;            // tries made
  std::stop_token stop;
  AsyncLock::Callback done;
  // Under the timetable's mutex: where it is in the timetable while `scheduled`; a nudge that
  // came while it was out (being tried) makes its next try due at once.
  std::multimap<Clock::time_point, std::unique_ptr<Pending>>::iterator where;
  bool scheduled = false;
  bool nudged = false;
  bool watched = false;  // watch_releases was asked (it may have said no)
  // Last, so destroyed first: no nudge runs once the rest of the entry is going away.
  std::unique_ptr<Lock::ReleaseWatch> watch;
  std::optional<std::stop_callback<std::function<void()>>> on_stop;  // nudges on a stop request
};

// Calls `done` with the end; what it throws is logged and dropped (it runs on a worker thread).
void finish(Pending& p, std::optional<Lease> lease, std::exception_ptr error) noexcept {
  try {
    p.done(std::move(lease), error);
  } catch (const std::exception& e) {
    detail::log(LogLevel::kError,
                "an AsyncLock callback for key '" + p.key + "' threw: " + e.what());
  } catch (...) {
    detail::log(LogLevel::kError, "an AsyncLock callback for key '" + p.key + "' threw");
  }
}

}  // namespace

class AsyncLock::Impl {
 public:
  Impl(Lock& lock, AsyncLockOptions options)
      : lock_(lock), options_(options), rng_(std::random_device{}()) {
    workers_.reserve(static_cast<std::size_t>(options_.threads));
    for (int i = 0; i < options_.threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    // What is still pending ends with nothing. Taken out under the mutex, since a release may
    // still nudge an entry until its watch is gone (with the entry, after its callback).
    std::vector<std::unique_ptr<Pending>> left;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (auto& [due, p] : timetable_) {
        p->scheduled = false;
        left.push_back(std::move(p));
      }
      timetable_.clear();
    }
    for (std::unique_ptr<Pending>& p : left) {
      --pending_;
      finish(*p, std::nullopt, nullptr);
      p.reset();
    }
  }

  void start(std::unique_ptr<Pending> p) {
    ++pending_;
    if (p->stop.stop_possible()) {
      Pending* raw = p.get();
      p->on_stop.emplace(p->stop, std::function<void()>([this, raw] { nudge(*raw); }));
    }
    if (options_.first_try_in_caller) {
      if (!attempt(p)) return;
    }
    schedule(std::move(p), Clock::now());
  }

  std::size_t pending() const noexcept { return pending_.load(); }

 private:
  // One try of `p`: false when it ended `p` (which then is gone).
  bool attempt(std::unique_ptr<Pending>& p) noexcept {
    if (p->stop.stop_requested()) return end(p, std::nullopt, nullptr);
    std::optional<Lease> lease;
    try {
      lease = lock_.try_acquire(p->key, p->options);
    } catch (...) {
      return end(p, std::nullopt, std::current_exception());
    }
    ++p->attempts;
    if (lease || Clock::now() >= p->deadline) return end(p, std::move(lease), nullptr);
    try {
      if (p->watch) {
        p->watch->rearm();
      } else if (!p->watched) {
        p->watched = true;
        Pending* raw = p.get();
        p->watch = lock_.watch_releases(p->key, [this, raw] { nudge(*raw); });
      }
    } catch (...) {
      // Cannot watch (the listener could not start): this entry polls.
    }
    return true;
  }

  // A release may have freed `p`'s key: its next try is due now.
  void nudge(Pending& p) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (!p.scheduled) {
        p.nudged = true;
        return;
      }
      auto node = timetable_.extract(p.where);
      node.key() = Clock::now();
      p.where = timetable_.insert(std::move(node));
    }
    wake_.notify_one();
  }

  // Counted as ended before its callback runs, which may be what the caller waits for.
  bool end(std::unique_ptr<Pending>& p, std::optional<Lease> lease, std::exception_ptr error) {
    --pending_;
    finish(*p, std::move(lease), error);
    p.reset();
    return false;
  }

  // Puts `p` back, due at its next backoff time after `now` (never past its deadline).
  void schedule(std::unique_ptr<Pending> p, Clock::time_point now) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      Clock::time_point due = now;
      if (p->attempts > 0 && !p->nudged) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(Clock::duration::zero(), p->deadline - now));
        due = now + Backoff::wait(options_.backoff, p->attempts - 1, left, rng_);
      }
      p->nudged = false;
      p->scheduled = true;
      Pending& entry = *p;
      entry.where = timetable_.emplace(due, std::move(p));
    }
    wake_.notify_one();
  }

  void work() {
    std::unique_lock<std::mutex> guard(mutex_);
    while (!stopping_) {
      if (timetable_.empty()) {
        wake_.wait(guard);
        continue;
      }
      const Clock::time_point due = timetable_.begin()->first;
      if (Clock::now() < due) {
        wake_.wait_until(guard, due);
        continue;
      }
      std::unique_ptr<Pending> p = std::move(timetable_.begin()->second);
      timetable_.erase(timetable_.begin());
      p->scheduled = false;
      guard.unlock();
      if (attempt(p)) schedule(std::move(p), Clock::now());
      guard.lock();
    }
  }

  Lock& lock_;
  const AsyncLockOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::unique_ptr<Pending>> timetable_;
  std::mt19937_64 rng_;  // under mutex_
  bool stopping_ = false;
  std::atomic<std::size_t> pending_{0};
  std::vector<std::thread> workers_;  // last: started once the rest is built
};

AsyncLock::AsyncLock(Lock& lock, AsyncLockOptions options) : made_in_(::getpid()) {
  if (options.threads < 1 || options.threads > 64) {
    throw Error(ErrorCode::kInvalidArgument,
                "an AsyncLock needs 1 to 64 threads; got " + std::to_string(options.threads));
  }
  impl_ = std::make_unique<Impl>(lock, options);
}

AsyncLock::~AsyncLock() {
  // A forked child's copy: its threads run in the parent only, and joining them here would wait
  // forever, so the child leaves the copy as it is.
  if (::getpid() != made_in_) (void)impl_.release();
}

void AsyncLock::acquire(std::string_view key, std::chrono::milliseconds timeout,
                        const LockOptions& options, Callback done, std::stop_token stop) {
  if (::getpid() != made_in_) {
    throw Error(ErrorCode::kFailedPrecondition,
                "this AsyncLock was made before fork() in the parent process, whose threads run "
                "its acquires: make a new AsyncLock in this process");
  }
  const bool forever = detail::is_forever_wait(timeout);  // throws for a negative one
  auto p = std::make_unique<Pending>();
  p->key = std::string(key);
  p->options = options;
  // The caller's thread owns the lease, not the thread that happens to try.
  if (!p->options.owner) p->options.owner = Owner::current_thread();
  p->deadline = forever ? Clock::time_point::max() : Clock::now() + timeout;
  p->stop = std::move(stop);
  p->done = std::move(done);
  impl_->start(std::move(p));
}

std::future<std::optional<Lease>> AsyncLock::acquire(std::string_view key,
                                                     std::chrono::milliseconds timeout,
                                                     const LockOptions& options,
                                                     std::stop_token stop) {
  auto promise = std::make_shared<std::promise<std::optional<Lease>>>();
  std::future<std::optional<Lease>> out = promise->get_future();
  acquire(
      key, timeout, options,
      [promise](std::optional<Lease> lease, std::exception_ptr error) {
        if (error) {
          promise->set_exception(error);
        } else {
          promise->set_value(std::move(lease));
        }
      },
      std::move(stop));
  return out;
}

bool AsyncLock::Acquiring::await_suspend(std::coroutine_handle<> waiting) {
  // 0: started; 1: the coroutine is suspended; 2: the acquire ended. Whichever of the two sides
  // comes second knows: the callback resumes a suspended coroutine, and await_suspend does not
  // suspend one whose acquire already ended (the first try in the caller took the key).
  auto state = std::make_shared<std::atomic<int>>(0);
  lock_->acquire(
      key_, timeout_, options_,
      [this, waiting, state](std::optional<Lease> lease, std::exception_ptr error) {
        lease_ = std::move(lease);
        error_ = error;
        if (state->exchange(2) == 1) waiting.resume();
      },
      stop_);
  return state->exchange(1) != 2;
}

std::optional<Lease> AsyncLock::Acquiring::await_resume() {
  if (error_) std::rethrow_exception(error_);
  return std::move(lease_);
}

std::size_t AsyncLock::pending() const noexcept { return impl_->pending(); }

}  // namespace dblock
