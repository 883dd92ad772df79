// The one interface every lock strategy implements, and the lease handle it returns.
//
//   dblock::UniqueKeyLock locks(*pool);                      // a strategy (unique_key_lock.hpp)
//   if (auto lease = locks.try_acquire("asset:42")) {        // one round trip
//     transfer(lease->fencing_token());                      // pass the token to your writes
//   }                                                        // released here
//
// Expected outcomes are values: try_acquire/acquire return an empty optional when someone else
// holds the key or the wait timed out. Faults (database unreachable, table missing, bad key) are
// dblock::Error exceptions.
//
// Thread-safety: a Lock may be used from many threads at once. A Lease is used by one thread at
// a time (it may move between threads); the background renewer touches it safely.
//
// fork(): fork before taking locks. A child inherits neither the parent's leases nor its
// renewer thread; it gets a process identity of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "dblock/connection.hpp"
#include "dblock/owner.hpp"

namespace dblock {

namespace detail {
class LeaseCore;  // strategy-specific state shared by a Lease and the renewer
}

struct LockOptions {
  // How long the lease lasts without renewal, measured on the database clock.
  // 1 ms to 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(30);
  // Who holds it. Default: the calling thread (Owner::current_thread()).
  std::optional<Owner> owner{};
  // Stored with the lock row (JSON); shown by `dblock locks`.
  nlohmann::json metadata{};
  // Renew in the background at a third of the TTL until released. A renewal that finds the
  // lease gone marks it lost and calls on_lost.
  bool auto_renew = true;
  // Called (from the renewer's thread) when the lease is found lost. Must not block long.
  std::function<void(const std::string& key)> on_lost{};
};

enum class ReleaseOutcome {
  kReleased,     // the key is free now
  kDecremented,  // a reentrant hold was given back; the owner still holds the key
  kNotHeld,      // the lease was lost (expired, taken over) or already released; nothing changed
};

std::string_view to_string(ReleaseOutcome outcome) noexcept;

// A held lock. Move-only; releasing on destruction, never throwing from the destructor.
class Lease {
 public:
  Lease() noexcept;
  explicit Lease(std::shared_ptr<detail::LeaseCore> core) noexcept;
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;  // releases what this held first
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  // True until release() (or a move) empties the handle. A lost lease is still a handle: ask
  // lost().
  bool valid() const noexcept;
  explicit operator bool() const noexcept { return valid(); }

  const std::string& key() const;
  // Strictly increasing per key over every acquisition (reentrant acquisitions share one).
  // Pass it to the writes the lock protects and have them reject smaller tokens.
  std::int64_t fencing_token() const;
  // The random id of this acquisition.
  const std::string& lease_id() const;
  const Owner& owner() const;
  // True once dblock found the lease gone (a renewal or release matched no row of ours).
  bool lost() const noexcept;

  // Gives the hold back (owner- and token-checked in one statement). Empties the handle.
  // Throws dblock::Error on faults (e.g. connection lost: the lease then expires by its TTL).
  ReleaseOutcome release();
  // Extends the lease to `ttl` from now on the database clock. Returns false and marks the lease
  // lost when it is no longer held. Throws Error(kInvalidArgument) unless 1 ms <= ttl <= 365
  // days, before sending anything.
  bool renew(std::chrono::milliseconds ttl);
  bool renew();  // with the TTL it was acquired with

  // For transactional strategies: the connection (and open transaction) the critical section
  // must use. nullptr for the unique-key strategy, which holds no transaction.
  Connection* connection() const;

 private:
  std::shared_ptr<detail::LeaseCore> core_;
};

// The interface of every lock strategy.
class Lock {
 public:
  virtual ~Lock() = default;

  // One attempt: a lease, or nothing if another owner holds the key.
  virtual std::optional<Lease> try_acquire(std::string_view key,
                                           const LockOptions& options = {}) = 0;
  // Waits up to `timeout` (bounded by backoff with jitter, or notification where available).
  virtual std::optional<Lease> acquire(std::string_view key, std::chrono::milliseconds timeout,
                                       const LockOptions& options = {}) = 0;
  // Waits without a limit.
  std::optional<Lease> acquire(std::string_view key, const LockOptions& options = {}) {
    return acquire(key, std::chrono::milliseconds::max(), options);
  }
};

// Runs fn(lease) under the lock and releases it on every path (return or exception). Returns
// nothing when the lock was not obtained within `timeout`; otherwise fn's result (true for a
// void fn).
template <class Fn>
auto with_lock(Lock& lock, std::string_view key, std::chrono::milliseconds timeout,
               const LockOptions& options, Fn&& fn) {
  using R = std::invoke_result_t<Fn&, Lease&>;
  using Out = std::conditional_t<std::is_void_v<R>, bool, R>;
  std::optional<Lease> lease = lock.acquire(key, timeout, options);
  if (!lease) return std::optional<Out>();
  if constexpr (std::is_void_v<R>) {
    fn(*lease);
    lease->release();
    return std::optional<Out>(true);
  } else {
    std::optional<Out> out(fn(*lease));
    lease->release();
    return out;
  }
}

}  // namespace dblock
