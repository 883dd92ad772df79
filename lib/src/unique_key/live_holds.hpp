// SPDX-License-Identifier: Apache-2.0
// The unique-key leases this process holds, counted by id: lock table, key, owner and fencing
// token (detail::UniqueKeyLockCore::live_id). Internal.
//
// An owner's row whose holds outnumber its live leases here carries holds of acquires whose reply
// never came (the statement ran, the caller got an error and no lease), or of releases whose fate
// is unknown and whose resending was overtaken by another one. Release gives those back too (the
// release_rest statement), or the owner's next acquire would re-enter them, get the token of a
// hold the caller was told is gone, and its release leave the key held. The token tells the key's
// tenures apart: a lease of an earlier tenure (expired, the row granted anew since) accounts for
// none of the current one's holds.
//
//   LiveHolds::instance().add(id);      // a lease granted
//   LiveHolds::instance().count(id);    // 1
//   LiveHolds::instance().remove(id);   // released: gone again
//
// Thread-safety: every member may be called from many threads at once. instance() is the calling
// process's own (a forked child starts with none: see per_process.hpp).
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace dblock::detail {

class LiveHolds {
 public:
  // This process's.
  static LiveHolds& instance();

  // Counts one more lease with `id`.
  void add(const std::string& id);
  // How many leases with `id` there are now.
  int count(const std::string& id);
  // Forgets one lease with `id` (nothing if there is none).
  void remove(const std::string& id);

 private:
  std::mutex mu_;
  std::multiset<std::string> leases_;  // one id a lease
};

}  // namespace dblock::detail
