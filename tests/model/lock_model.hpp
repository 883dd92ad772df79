// SPDX-License-Identifier: Apache-2.0
// The reference model of the model test: what the unique-key lock table must grant, and the
// invariants checked after every step. Pure logic over what the test saw (the latest ground
// truth read, the leases it holds and what they report); no database access.
//
// Time is the database's: a row's expiry is known only as a window of this process's steady
// clock (lock_truth.hpp), widened by a margin for scheduling jitter. A prediction is firm only
// when the outcome is unambiguous over the whole window of the call; otherwise both outcomes are
// accepted and the model follows what happened (the next ground truth read).
//
// Thread-safety: none; the test thread owns the model.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dblock/owner.hpp"
#include "lock_truth.hpp"

namespace dblock::testing {

// Three-valued: the model's answer to "is it so throughout the call?".
enum class Tri { kYes, kNo, kUnknown };

const char* to_string(Tri t);

// One lease handle of the test as seen after a ground truth read.
struct HandleView {
  int id = 0;
  std::string key;
  std::string who;  // the owner's label in the step log ("w ", "proc2/w", ...)
  Owner owner;
  std::int64_t token = 0;
  bool lost = false;  // Lease::lost(), asked after the ground truth was read
};

class LockModel {
 public:
  explicit LockModel(std::chrono::milliseconds margin) : margin_(margin) {}

  std::chrono::milliseconds margin() const { return margin_; }
  const Truth& truth() const { return truth_; }
  void observe(Truth truth) { truth_ = std::move(truth); }

  // Whether `key`'s row is held by some lease (or claim), unexpired, at every moment of
  // [from, to]. kNo when it is free or expired at every moment of it. `renewed` says a lease
  // renewed in the background holds the row: it may have been extended since the last read.
  Tri held_throughout(const std::string& key, ModelClock::time_point from,
                      ModelClock::time_point to, bool renewed) const;

  // Fencing tokens. A grant is a re-entry when the owner holds a valid handle of the key with
  // the same token (`reentry`); any other grant must carry a token above every token handed out
  // for the key before (leases and claims). Returns what is wrong, empty when nothing is.
  std::string check_grant(const std::string& key, const std::string& who, std::int64_t token,
                          bool reentry);
  std::int64_t max_token(const std::string& key) const;

  // Claims made, which must stay as they are for good.
  void claimed(const std::string& key, const Owner& owner, std::int64_t token);

  // The invariants, after every step: each not-lost handle's hold is the row's (owner, token,
  // hold_count > 0, not expired on the server's clock by more than the margin), so at most one
  // owner's handles of a key are not lost; the row's hold_count covers its owner's not-lost
  // handles; claims stay. One line per violation.
  std::vector<std::string> check_invariants(const std::vector<HandleView>& handles) const;

 private:
  std::chrono::milliseconds margin_;
  Truth truth_;
  std::map<std::string, std::int64_t> max_token_;                 // by key
  std::map<std::string, std::set<std::int64_t>> handed_out_;      // by key
  std::map<std::string, std::pair<Owner, std::int64_t>> claims_;  // by key
};

}  // namespace dblock::testing
