// SPDX-License-Identifier: Apache-2.0
#include "proc_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

namespace dblock::cli {
namespace {

// `dblock run` scans /proc while processes come and go: a /proc/<pid>/stat opened while the
// process lived and read after it was reaped fails with ESRCH. Reading it must give "" (the
// process is gone), not throw: a stream's iterator threw there once and ended `dblock run`
// before it could stop its job's processes.
TEST(ProcFiles, AProcessGoneBetweenOpenAndReadReadsAsEmpty) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string path = "/proc/" + std::to_string(child) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(read_small_file(path).rfind(std::to_string(child) + " (", 0), 0u);  // alive
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(read_all(fd), "");
  ::close(fd);
  EXPECT_EQ(read_small_file(path), "");
}

TEST(ProcFiles, AFileReadsWhole) {
  const std::string text = read_small_file("/proc/self/stat");
  EXPECT_EQ(text.rfind(std::to_string(::getpid()) + " (", 0), 0u) << text;
  EXPECT_EQ(read_small_file("/nonexistent/dblock-file"), "");
}

}  // namespace
}  // namespace dblock::cli
