// SPDX-License-Identifier: Apache-2.0
// Runs a piece of a unit test in a child of fork() and brings back what it computed, for tests of
// what a forked child sees (a process identity, a per-process registry).
//
//   const ChildAnswer child = ask_a_child([] { return process_instance(); });
//   EXPECT_NE(child.text, process_instance());
//
// Thread-safety: call from the test's thread; the child runs `child` on the forking thread only.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace dblock {

// What `child` returns, computed in a child of fork(), and the child's pid. Fails the test
// unless the child exits cleanly.
struct ChildAnswer {
  pid_t pid = -1;
  std::string text;
};
template <class Child>
ChildAnswer ask_a_child(Child child) {
  ChildAnswer out;
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe() failed";
    return out;
  }
  out.pid = ::fork();
  if (out.pid == 0) {
    ::close(fds[0]);
    const std::string text = child();
    const ssize_t written = ::write(fds[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  if (out.pid < 0) {
    ::close(fds[0]);
    ADD_FAILURE() << "fork() failed";
    return out;
  }
  char buf[128];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.text.append(buf, std::size_t(n));
  ::close(fds[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(out.pid, &status, 0), out.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return out;
}

}  // namespace dblock
