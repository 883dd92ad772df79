// SPDX-License-Identifier: Apache-2.0
// Child processes whose wall clock is hours off, to show that no client clock enters a lock
// decision. libfaketime is preloaded into the child itself (the faketime wrapper would stand
// between the test and the child's signals) and shifts the wall clock only: the monotonic clock
// has no time of day to be wrong about, and libfaketime's shifted one breaks timed waits.
//
//   ASSERT_TRUE(libfaketime_installed()) << "libfaketime is missing: run scripts/install-deps.sh";
//   ChildProcess holder(argv, wall_clock_off_by("+2h"));  // the child prints "wall <seconds>"
//   ASSERT_TRUE(holder.wait_for_output(" wall ", std::chrono::seconds(15)));
//   EXPECT_NEAR(printed_wall_clock_skew(holder.output_so_far()), 7200.0, 60.0);
//
// Thread-safety: plain functions.
#pragma once

#include <map>
#include <string>

namespace dblock::testing {

// Whether libfaketime's library is installed (scripts/install-deps.sh installs it).
bool libfaketime_installed();

// The environment (for ChildProcess) of a child whose wall clock is `offset` off: "+2h", "-5h".
std::map<std::string, std::string> wall_clock_off_by(const std::string& offset);

// Seconds from this process's wall clock now to the one a child printed as "wall <seconds since
// the epoch>" in `output`.
double printed_wall_clock_skew(const std::string& output);

}  // namespace dblock::testing
