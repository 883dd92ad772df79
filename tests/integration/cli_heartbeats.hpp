// SPDX-License-Identifier: Apache-2.0
// A CliFixture whose commands write heartbeats: beat.sh appends "<ns> <fencing token>" to one
// log every 50 ms (stamped with one clock, `date +%s%N`), so a test of `dblock run` or
// `dblock lead` can check, from inside the commands, that no two of them worked at the same
// time and that their tokens increase.
//
// Thread-safety: each fixture is used by its test's thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_fixture.hpp"

namespace dblock::testing {

using namespace std::chrono_literals;

// The heartbeats one run wrote: its fencing token and the first and last stamp (ns, wall clock).
struct Span {
  std::int64_t token = 0;
  std::int64_t first = 0;
  std::int64_t last = 0;
  int beats = 0;
};

inline std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class CliHeartbeatTest : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    if (HasFatalFailure()) return;  // no directory to write into (the database is unreachable)
    // beat.sh LOG COUNT [ignore-term]: appends "<ns> <token>" to LOG every 50 ms, COUNT times
    // (0: until killed).
    std::ofstream(file("beat.sh")) << "[ \"$3\" = ignore-term ] && trap '' TERM\n"
                                      "i=0\n"
                                      "while [ \"$2\" -eq 0 ] || [ $i -lt \"$2\" ]; do\n"
                                      "  echo \"$(date +%s%N) $DBLOCK_FENCING_TOKEN\" >> \"$1\"\n"
                                      "  i=$((i + 1))\n"
                                      "  sleep 0.05\n"
                                      "done\n";
  }

  // `sh beat.sh <log> <count> [ignore-term]` as a shell command.
  std::string beat(int count, bool ignore_term = false) const {
    return "sh '" + file("beat.sh") + "' '" + file("log") + "' " + std::to_string(count) +
           (ignore_term ? " ignore-term" : "");
  }

  // The runs in the log, by their first heartbeat.
  std::vector<Span> spans() const {
    std::map<std::int64_t, Span> by_token;
    std::istringstream in(read_text_file(file("log")));
    std::int64_t ns = 0, token = 0;
    while (in >> ns >> token) {
      Span& s = by_token[token];
      if (s.beats++ == 0) s.token = token, s.first = ns;
      s.first = std::min(s.first, ns);
      s.last = std::max(s.last, ns);
    }
    std::vector<Span> out;
    for (const auto& entry : by_token) out.push_back(entry.second);
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.first < b.first; });
    return out;
  }

  // Checks that `expected` runs worked, one after the other, with increasing tokens.
  void expect_no_overlap(std::size_t expected) const {
    auto runs = spans();
    ASSERT_EQ(runs.size(), expected) << read_text_file(file("log"));
    expect_one_after_another(runs);
  }

  // Checks that the runs worked one after the other, with increasing tokens.
  void expect_one_after_another(const std::vector<Span>& runs) const {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      EXPECT_GT(runs[i].token, 0);
      if (i == 0) continue;
      EXPECT_GT(runs[i].token, runs[i - 1].token) << "tokens must increase run after run";
      EXPECT_GT(runs[i].first, runs[i - 1].last)
          << "run " << i << " started " << (runs[i - 1].last - runs[i].first) / 1000000
          << " ms before run " << i - 1 << " stopped";
    }
  }

  // Waits until the log holds a heartbeat.
  bool wait_for_beats() const {
    // Generous: under the sanitizers, with another test alongside, a first run was seen to need
    // more than 5 s to take the lock and start its command.
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (spans().empty()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  // Checks that nothing of the first run worked after `ended` (ns), waiting a little first so
  // that a survivor would have shown itself.
  void expect_first_run_ended_by(std::int64_t ended) const {
    std::this_thread::sleep_for(300ms);
    auto runs = spans();
    ASSERT_FALSE(runs.empty());
    EXPECT_LT(runs[0].last, ended) << "a process of the run kept working after dblock exited";
  }
};

}  // namespace dblock::testing
