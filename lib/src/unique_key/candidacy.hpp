// SPDX-License-Identifier: Apache-2.0
// A candidate's registration for hand-offs (Election::hand_off): while it waits for a key, the
// candidate keeps a place in the key's queue (lock_waiters, migration 0010) with the lease a
// hand-off gives it (its owner, TTL, lock-delay and metadata), so that the holder, in another
// process, can move the key to it in one statement (UniqueKeyLockCore::hand_off). The place
// lasts kLasting unrefreshed: a candidate that died drops out that soon. Explained in
// docs/locks/election.md. Internal.
//
//   Candidacy candidacy(lock, key, lease_options);
//   candidacy.offer();   // before each wait for the key; refreshes the place
//   candidacy.withdraw();  // once it holds the key, or stops waiting (also ~Candidacy)
//
// Thread-safety: one candidate's, used by its campaigning thread only.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dblock/lock.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::detail {

class Candidacy {
 public:
  // How long a place lasts unrefreshed; a waiting candidate refreshes it at least every second.
  static constexpr std::chrono::milliseconds kLasting{3000};

  // `lease`: what the candidate acquires the key with (owner, TTL, lock-delay, metadata).
  Candidacy(UniqueKeyLock& lock, std::string key, const LockOptions& lease);
  ~Candidacy();  // withdraws; never throws
  Candidacy(const Candidacy&) = delete;
  Candidacy& operator=(const Candidacy&) = delete;

  // Registers the candidate, or refreshes its place. Throws Error (kUndefinedTable before
  // migration 0010).
  void offer();
  // Gives up the place, if it has one; never throws (a place left behind ends at kLasting).
  void withdraw() noexcept;

 private:
  std::shared_ptr<UniqueKeyLockCore> impl_;
  std::string key_;
  const LockOptions& lease_;
  std::string waiter_id_;
  bool placed_ = false;  // an offer took a place
};

}  // namespace dblock::detail
