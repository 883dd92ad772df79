// SPDX-License-Identifier: Apache-2.0
// The election tests' record of what the candidates' work saw (terms begun and ended, with the
// candidate, the term and the time) and its check: one leader at a time, terms increasing.
// Thread-safety: History is written by every candidate's thread at once.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dblock::testing {

// Polls `done` every 2 ms until it holds (true) or `patience` has passed (false).
template <class Predicate>
bool eventually(Predicate done,
                std::chrono::milliseconds patience = std::chrono::milliseconds(15000)) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

class History {
 public:
  using Clock = std::chrono::steady_clock;
  struct Event {
    bool begins;
    std::string candidate;
    std::int64_t term;
    Clock::time_point at;
  };
  void begin(const std::string& candidate, std::int64_t term) {
    std::lock_guard lock(mu_);
    if (leading_ != 0) overlaps_++;
    ++leading_;
    events_.push_back({true, candidate, term, Clock::now()});
  }
  void end(const std::string& candidate, std::int64_t term) {
    std::lock_guard lock(mu_);
    --leading_;
    events_.push_back({false, candidate, term, Clock::now()});
  }
  std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  int overlaps() const {
    std::lock_guard lock(mu_);
    return overlaps_;
  }
  std::size_t terms() const {
    std::lock_guard lock(mu_);
    return static_cast<std::size_t>(
        std::count_if(events_.begin(), events_.end(), [](const Event& e) { return e.begins; }));
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
  int leading_ = 0;
  int overlaps_ = 0;
};

// Checks a history: terms alternate begin/end, never overlap, and strictly increase.
inline void expect_one_leader_at_a_time(const History& history) {
  EXPECT_EQ(history.overlaps(), 0) << "two candidates believed they led at once";
  std::int64_t last = 0;
  bool open = false;
  for (const auto& e : history.events()) {
    if (e.begins) {
      EXPECT_FALSE(open) << "term " << e.term << " began before the previous one ended";
      EXPECT_GT(e.term, last) << "term numbers went back";
      last = e.term;
      open = true;
    } else {
      EXPECT_TRUE(open);
      EXPECT_EQ(e.term, last);
      open = false;
    }
  }
}

}  // namespace dblock::testing
