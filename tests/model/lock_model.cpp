// SPDX-License-Identifier: Apache-2.0
#include "lock_model.hpp"

#include <sstream>

#include "enum_names.hpp"

namespace dblock::testing {

const char* to_string(Tri t) {
  constexpr auto kNames = detail::enum_names<Tri::kUnknown>({"yes", "no", "unknown"});
  return kNames.of(t, "unknown").data();
}

Tri LockModel::held_throughout(const std::string& key, ModelClock::time_point from,
                               ModelClock::time_point to, bool renewed) const {
  const TruthRow* row = truth_.find(key);
  if (row == nullptr || row->hold_count <= 0) return Tri::kNo;
  if (row->forever) return Tri::kYes;
  if (truth_.earliest_expiry(*row) - margin_ > to) return Tri::kYes;
  // A renewer may have extended the row since it was read: "expired" is then a guess.
  if (!renewed && truth_.latest_expiry(*row) + margin_ < from) return Tri::kNo;
  return Tri::kUnknown;
}

std::string LockModel::check_grant(const std::string& key, const std::string& who,
                                   std::int64_t token, bool reentry) {
  std::string problem;
  auto& seen = handed_out_[key];
  const std::int64_t before = max_token(key);
  if (!reentry && token <= before) {
    std::ostringstream s;
    s << "token: " << who << " got token " << token << " for " << key
      << " without holding a valid handle with that token, but tokens up to " << before
      << " were handed out already"
      << (seen.count(token) ? " (this very token included: a token handed out twice)" : "");
    problem = s.str();
  }
  seen.insert(token);
  if (token > before) max_token_[key] = token;
  return problem;
}

std::int64_t LockModel::max_token(const std::string& key) const {
  auto it = max_token_.find(key);
  return it == max_token_.end() ? 0 : it->second;
}

void LockModel::claimed(const std::string& key, const Owner& owner, std::int64_t token) {
  claims_[key] = {owner, token};
}

std::vector<std::string> LockModel::check_invariants(const std::vector<HandleView>& handles) const {
  std::vector<std::string> out;
  std::map<std::string, std::map<std::string, int>> holders;  // key -> owner -> not-lost handles
  for (const auto& h : handles) {
    if (h.lost) continue;
    holders[h.key][h.owner.to_string()]++;
    const TruthRow* row = truth_.find(h.key);
    std::ostringstream s;
    s << "lost(): handle #" << h.id << " of " << h.who << " on " << h.key << " (token " << h.token
      << ") reports !lost() but the row ";
    if (row == nullptr) {
      s << "is gone";
    } else if (row->owner != h.owner) {
      s << "belongs to " << row->owner.thread << " (" << row->owner.process << "@"
        << row->owner.host << ") with token " << row->fencing_token << " hold_count "
        << row->hold_count;
    } else if (row->fencing_token != h.token) {
      s << "carries token " << row->fencing_token << " (hold_count " << row->hold_count << ")";
    } else if (row->hold_count <= 0) {
      s << "is free (hold_count " << row->hold_count << ")";
    } else if (!row->forever && row->remaining_ms < -margin_.count()) {
      s << "expired " << -row->remaining_ms << " ms ago on the database clock";
    } else {
      continue;
    }
    out.push_back(s.str());
  }
  for (const auto& [key, owners] : holders) {
    if (owners.size() > 1) {
      std::ostringstream s;
      s << "exclusion: " << owners.size() << " owners hold not-lost handles of " << key << ":";
      for (const auto& [owner, n] : owners) s << " [" << owner << "] x" << n;
      out.push_back(s.str());
    }
    const TruthRow* row = truth_.find(key);
    for (const auto& [owner, n] : owners) {
      if (row != nullptr && row->owner.to_string() == owner && row->hold_count < n) {
        std::ostringstream s;
        s << "hold_count: " << key << " has hold_count " << row->hold_count << " but " << n
          << " not-lost handles of its owner";
        out.push_back(s.str());
      }
    }
  }
  for (const auto& [key, claim] : claims_) {
    const TruthRow* row = truth_.find(key);
    if (row == nullptr || !row->forever || row->owner != claim.first ||
        row->fencing_token != claim.second || row->hold_count != 1) {
      std::ostringstream s;
      s << "claim: the claim of " << key << " (token " << claim.second << ") ";
      if (row == nullptr) {
        s << "is gone";
      } else {
        s << "changed: owner " << row->owner.thread << " token " << row->fencing_token
          << " hold_count " << row->hold_count << (row->forever ? "" : " with an expiry");
      }
      out.push_back(s.str());
    }
  }
  return out;
}

}  // namespace dblock::testing
