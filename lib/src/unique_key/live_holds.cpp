// SPDX-License-Identifier: Apache-2.0
// LiveHolds, this process's live unique-key leases: purpose and thread-safety in live_holds.hpp.
#include "unique_key/live_holds.hpp"

#include "per_process.hpp"

namespace dblock::detail {

LiveHolds& LiveHolds::instance() {
  static PerProcess<LiveHolds> each;
  return each.get();
}

void LiveHolds::add(const std::string& id) {
  std::lock_guard lock(mu_);
  leases_.insert(id);
}

int LiveHolds::count(const std::string& id) {
  std::lock_guard lock(mu_);
  return static_cast<int>(leases_.count(id));
}

void LiveHolds::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  if (auto it = leases_.find(id); it != leases_.end()) leases_.erase(it);
}

}  // namespace dblock::detail
