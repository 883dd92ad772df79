// SPDX-License-Identifier: Apache-2.0
// PendingReleases, the unique-key releases kept when their fate is unknown: purpose and
// thread-safety in pending_releases.hpp.
#include "unique_key/pending_releases.hpp"

#include <algorithm>
#include <utility>

#include "per_process.hpp"

namespace dblock::detail {

PendingReleases& PendingReleases::instance() {
  static PerProcess<PendingReleases> each;
  return each.get();
}

void PendingReleases::keep(const std::string& id, Entry entry) {
  std::lock_guard lock(mu_);
  auto& kept = entries_[id];
  auto same = std::find_if(kept.begin(), kept.end(), [&](const Entry& e) {
    return e.request.release_id == entry.request.release_id;
  });
  if (same != kept.end()) {
    *same = std::move(entry);
  } else {
    kept.push_back(std::move(entry));
    ++count_;
  }
}

void PendingReleases::forget(const std::string& id, const std::string& release_id) {
  if (count_.load() == 0) return;  // the usual case: no map lookup on the hot path
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  count_ -=
      std::erase_if(it->second, [&](const Entry& e) { return e.request.release_id == release_id; });
  if (it->second.empty()) entries_.erase(it);
}

std::vector<PendingReleases::Entry> PendingReleases::find(const std::string& id) {
  if (count_.load() == 0) return {};
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return {};
  return it->second;
}

}  // namespace dblock::detail
