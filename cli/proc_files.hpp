// SPDX-License-Identifier: Apache-2.0
// Reading the small files of /proc and cgroupfs that `dblock run` looks at to find its job's
// processes. A process may exit between the open and the read of its /proc file; the read then
// fails (ESRCH), which a C++ stream reports by throwing from inside an iterator. These report
// such a file as empty instead: a process that is gone is not running.
//
// Thread-safety: plain functions.
#pragma once

#include <string>

namespace dblock::cli {

// Everything left to read from `fd` (which stays open), or what was read before a read error.
std::string read_all(int fd);

// The contents of the file at `path`, or "" when it cannot be opened or read.
std::string read_small_file(const std::string& path);

}  // namespace dblock::cli
