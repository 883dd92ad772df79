// SPDX-License-Identifier: Apache-2.0
// Unique-key releases whose fate is unknown (the connection failed on the way and on the retry),
// kept per process by holds id (lock table, key and owner: detail::UniqueKeyLockCore::holds_id), so
// that the owner's next acquire of the key through any UniqueKeyLock on the same table sends them
// first. Else that acquire would re-enter the hold the caller was told is gone and get its old
// fencing token back. Internal.
//
// Every kept release stays until it is sent: an owner may have several, one per tenure of the
// key (a lease of an earlier tenure released after the current one), and only the one with the
// current tenure's token frees its row. Each is sent through the lock that made it while that
// lock exists (it is not kept alive for this: its connection source may be gone with it), else
// through the acquiring lock.
//
//   PendingReleases::instance().keep(id, {lock, request});          // its fate is unknown
//   for (auto& e : PendingReleases::instance().find(id)) send(e);   // the next acquire
//   PendingReleases::instance().forget(id, request.release_id);     // sent
//
// Thread-safety: every member may be called from many threads at once. instance() is the calling
// process's own (a forked child starts with none: see per_process.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dblock/owner.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::detail {

// A release as sent: what to send again when its fate is unknown.
struct ReleaseRequest {
  std::string key;
  Owner owner;
  std::int64_t fencing_token = 0;
  std::string release_id;        // the same id on every attempt: see the release statement
  std::int64_t min_hold_ms = 0;  // LockOptions::min_hold of the lease
  // LockOptions::lock_delay of the lease: a release once its TTL ran out matches nothing
  std::int64_t lock_delay_ms = 0;
};

class PendingReleases {
 public:
  struct Entry {
    std::weak_ptr<detail::UniqueKeyLockCore> lock;  // the lock that made it
    ReleaseRequest request;
  };

  // This process's.
  static PendingReleases& instance();

  // Keeps `entry` under `id`, or replaces the one kept there with its release id (a resend that
  // failed again).
  void keep(const std::string& id, Entry entry);
  // Drops the release kept under `id` with `release_id`, if there is one.
  void forget(const std::string& id, const std::string& release_id);
  // The releases kept under `id`, oldest first.
  std::vector<Entry> find(const std::string& id);

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<Entry>> entries_;  // by holds id
  std::atomic<std::size_t> count_{0};  // how many entries_ holds in all, read without the mutex
};

}  // namespace dblock::detail
