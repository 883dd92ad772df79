// SPDX-License-Identifier: Apache-2.0
// The steps of the model test on one database x driver pair: each runs one operation of the
// unique-key lock as one of several simulated owners, predicts its outcome from the reference
// model (lock_model.hpp), then reads the lock table (lock_truth.hpp) and checks the invariants.
// random_step() draws a step from a seeded generator; the regression scenarios call the steps
// one by one.
//
// Owners, by label: "w", "w ", "W", "x" (named owners of this process, look-alikes included),
// "thread" (the test thread's default owner), "thread2" (another thread of this process),
// "proc2/w" and "host2/w" (the name "w" in another process and on another host). Keys: k0, k1,
// k2 and c0 (the only key claims go to). Two UniqueKeyLock objects (A and B) share one table
// and one pool whose sessions the test kills and whose reconnects it refuses (tagged_pool.hpp).
//
// Thread-safety: none; one test thread drives a runner (the lock's renewer runs in the
// background, as it does for users).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends.hpp"
#include "dblock/unique_key_lock.hpp"
#include "lock_model.hpp"
#include "tagged_pool.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;

struct AcquireSpec {
  std::string who;
  std::string key;
  milliseconds ttl{1000};
  bool auto_renew = false;
  int lock = 0;           // 0: lock A, 1: lock B
  milliseconds wait{-1};  // negative: try_acquire; otherwise acquire(key, wait)
};

// What a with_lock step's critical section does.
enum class WithLockFn {
  kQuick,                 // returns at once (TTL of a second or more)
  kSleepPastTtl,          // sleeps past a 300 ms TTL, no renewal
  kSleepPastTtlIntruder,  // the same, then another owner takes the key
  kRenewedPastTtl,        // sleeps past a 300 ms TTL, renewed in the background
};

// The operation an outage step runs while sessions are killed and reconnects refused.
enum class OutageOp { kRelease, kDrop, kRenew, kAcquire };

class ModelRunner {
 public:
  // Creates fresh lock tables for this runner (dropped by the destructor). With `fair`, both
  // lock objects wait fairly (UniqueKeyLockOptions::fair): steps run one at a time, so no waiter
  // is ever queued when a step starts, the outcomes are those of the unfair lock, and after every
  // step the queue must be empty (a waiter leaves it whether it got the key or not).
  ModelRunner(const Backend& backend, std::uint64_t seed, bool fair = false);
  ~ModelRunner();

  // The steps. Each returns after the step's checks; a handle id of -1 means nothing acquired.
  int acquire(const AcquireSpec& spec);
  void renew(int handle, milliseconds ttl);
  void release(int handle);
  // Releases `handle` while `waiter` (another owner) sleeps in a blocking acquire of its key:
  // through the same lock object, or through the other one when the waiter is of another
  // process or host ("proc2/w", "host2/w"). A release that frees the key must hand it to the
  // waiter (or wake it), in time; a fair release on PostgreSQL grants it to the waiter of the
  // other lock object in its own statement.
  void release_awaited(int handle, const std::string& waiter, milliseconds ttl);
  void drop(int handle);
  void kill_sessions();
  void outage(OutageOp op, int handle, const AcquireSpec& spec = {});
  void clean(milliseconds grace);
  void sleep(milliseconds d);
  void claim(const std::string& who, const std::string& key);
  void with_lock(const std::string& who, const std::string& key, WithLockFn fn,
                 const std::string& intruder = "x");
  // Writes `handle`'s token in a transaction fenced by its lease (fenced_writes.cpp): committed
  // while the model says the lease holds its key, refused (kLeaseLost) once it does not; the
  // writes of each key must follow the token order.
  void fenced_write(int handle);
  enum class Fenced { kWritten, kRefused };
  void random_step();
  // Leaves kinds of steps out of random_step(), for narrowing down a failure: a comma-separated
  // list of acquire, renew (also background renewal), release, drop, kill, outage, clean, sleep,
  // claim, with_lock, awaited (release_awaited), fenced (fenced_write), reentry (owners chosen
  // regardless of who holds the key), lookalikes ("w " and "W").
  void leave_out(const std::string& list);

  int steps() const { return step_; }
  // Every violation seen so far, each prefixed with its step number.
  const std::vector<std::string>& failures() const { return failures_; }
  // The failures and the last steps before them, for a test's failure message.
  std::string report() const;
  // Steps run per kind and a few outcome counts: "acquire=812 granted=430 ...".
  std::string stats() const;

 private:
  struct Handle {
    std::string key;
    std::string who;
    std::int64_t token = 0;
    milliseconds ttl{0};
    bool auto_renew = false;
    int lock = 0;
    std::optional<Lease> owned;  // the test's own handles
    Lease* borrowed = nullptr;   // with_lock's lease while its critical section runs
    Lease& lease() { return borrowed != nullptr ? *borrowed : *owned; }
  };
  // A release the lock object kept after a lost connection: (lock, key, owner) -> token.
  using PendingKey =
      std::tuple<int, std::string, std::string, std::int64_t>;  // lock, key, owner, token

  const Owner& owner(const std::string& who) const;
  LockOptions options(const AcquireSpec& spec) const;
  void begin(const std::string& what);
  void fail(const std::string& problem);
  void note(const std::string& outcome);
  void refresh();  // reads the ground truth into the model
  void end();      // refresh + invariants
  // Whether a not-lost auto-renewed handle holds the row of `key`.
  bool renewed(const std::string& key);
  // Whether a valid handle of `who` holds `key` with `token` (a re-entry may return it).
  bool holds(const std::string& who, const std::string& key, std::int64_t token,
             int except = -1) const;
  // Fenced writes (fenced_writes.cpp): the table, one write and the check of a key's history.
  void create_fenced_table();
  Fenced write_fenced(const Lease& lease, const std::string& key);
  void check_fenced_history(const std::string& key);
  // Handles of `who`'s owner on `key` with `token` (the same tenure of the key), but `except`:
  // the leases the library counts before it frees holds none of them accounts for.
  int others_of_owner(const std::string& who, const std::string& key, std::int64_t token,
                      int except) const;
  // Whether a release of `key` by `who` is kept after an outage by either lock object: the
  // process sends it before that owner's next acquire of the key through any lock on the table.
  bool release_kept(const std::string& who, const std::string& key) const;
  void forget_kept(const std::string& who, const std::string& key);
  // The acquire itself, shared by acquire steps and with_lock's intruder. Adds the handle.
  int do_acquire(const AcquireSpec& spec);
  // What giving handle `id` back (a release or a drop) starts from: the handle, its key and
  // token, and the key's hold count in the truth before. Begins the step
  // "<verb> #<id> (<owner> <key>)<more>".
  struct GiveBack {
    Handle& h;
    std::string key;
    std::int64_t token;
    std::int64_t hold_before;
  };
  GiveBack begin_give_back(int id, const std::string& verb, const std::string& more = "");
  // Expected release outcome for handle `id` over [from, to]; nullopt when ambiguous.
  std::optional<ReleaseOutcome> expected_release(int id, ModelClock::time_point from,
                                                 ModelClock::time_point to);
  void check_row_after_release(const std::string& key, std::int64_t token, std::int64_t hold_before,
                               ReleaseOutcome outcome);
  int pick_handle();
  std::string pick_owner_for(const std::string& key);
  milliseconds pick_ttl();
  std::string random_owner();

  Backend backend_;
  std::uint64_t seed_;
  bool fair_;
  std::mt19937_64 rng_;
  TableNames tables_;
  std::unique_ptr<Connection> checker_;  // ground truth, kills, cleaner: never killed
  std::unique_ptr<Connection> writer_;   // fenced writes: never killed
  std::string writes_;                   // their table
  std::unique_ptr<TaggedPool> pool_;
  std::vector<std::unique_ptr<UniqueKeyLock>> locks_;
  std::map<std::string, Owner> owners_;
  LockModel model_;
  std::map<int, Handle> handles_;
  std::set<PendingKey> pending_;  // releases kept after an outage
  bool in_outage_ = false;
  int next_handle_ = 1;
  int step_ = 0;
  std::string current_;
  std::deque<std::string> log_;
  std::vector<std::string> failures_;
  std::map<std::string, int> counts_;
  std::set<std::string> left_out_;
};

std::string label(const std::string& who);

}  // namespace dblock::testing
