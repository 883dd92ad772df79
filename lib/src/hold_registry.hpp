// SPDX-License-Identifier: Apache-2.0
// The holds of a strategy whose leases keep a connection (the row lock's transaction, the
// session lock's session), by owner and key: an owner acquiring a key it already holds re-enters
// its hold (one more lease on the same connection) instead of waiting for itself on a second
// one. Internal.
//
// Hold is the strategy's struct; it has `std::string registry_key` (owner and key) and
// `int count` (the leases on it, guarded by the registry).
//
// Thread-safety: every member may be called from many threads at once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "dblock/error.hpp"

namespace dblock::detail {

template <class Hold>
class HoldRegistry {
 public:
  // The hold on `registry_key`, with one more lease counted; nullptr if there is none. Throws
  // Error(kConnectionLost) when `broken(hold)` says its connection is gone (`what` names what
  // held the lock, e.g. "transaction").
  template <class Broken>
  std::shared_ptr<Hold> reenter(const std::string& registry_key, Broken&& broken,
                                std::string_view what) {
    std::lock_guard lock(mu_);
    auto it = holds_.find(registry_key);
    if (it == holds_.end()) return nullptr;
    if (broken(*it->second)) {
      throw Error(ErrorCode::kConnectionLost,
                  "this owner's " + std::string(what) +
                      " holding the same lock was lost; release the outer lease and acquire "
                      "again");
    }
    ++it->second->count;
    return it->second;
  }

  // A new hold, counting its first lease.
  void remember(const std::shared_ptr<Hold>& hold) {
    std::lock_guard lock(mu_);
    holds_[hold->registry_key] = hold;
  }

  // One lease of `hold` ends; `also(hold)` runs first, under the registry's lock. True when it
  // was the last lease (the hold has left the registry).
  template <class Also>
  bool leave(Hold& hold, Also&& also) {
    std::lock_guard lock(mu_);
    also(hold);
    if (--hold.count > 0) return false;
    holds_.erase(hold.registry_key);
    return true;
  }
  bool leave(Hold& hold) {
    return leave(hold, [](Hold&) {});
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Hold>> holds_;
};

}  // namespace dblock::detail
