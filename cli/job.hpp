// SPDX-License-Identifier: Apache-2.0
// The command `dblock run` runs, as a whole: the command and every process it starts, so that
// dblock can signal all of them at once and know when the last one is gone.
//
// Where the processes are found:
//  - a cgroup v2 of their own, when the machine allows it (dblock runs as root and a cgroup v2
//    hierarchy is mounted at /sys/fs/cgroup, or at /sys/fs/cgroup/unified on hybrid systems):
//    a child of dblock's own cgroup, dblock-run-<pid>, removed again at the end. Every
//    descendant stays in it, whatever it does (double fork, setsid);
//  - always: a process group of their own (the command leads it), and dblock as their child
//    subreaper (PR_SET_CHILD_SUBREAPER), so a descendant whose parent died is re-parented to
//    dblock instead of init: it is found as a child of dblock, and reaped by it. Without a
//    cgroup, a descendant that left the group (setsid) while its parent lives is found only
//    once that parent has died, which stopping the group brings about.
// Cgroups, the subreaper and the parent-death signal below are Linux's. Elsewhere (and in a
// build with -DDBLOCK_PORTABLE_FALLBACKS, which compiles this on Linux to test it) the job is its
// process group and dblock's own children: an orphan re-parented to init is not found, and a
// dblock killed with SIGKILL leaves its command running (docs/platforms.md).
//
// A dblock killed with SIGKILL cannot stop the job itself. On Linux a guard does: a second child
// of dblock's (not in the job) that sleeps until dblock dies (its parent-death signal), then
// sends the job's process group and cgroup SIGTERM and, `kill_after` later, SIGKILL, as dblock
// would have. The command itself also gets SIGTERM from its own parent-death signal.
//
// Thread-safety: used from the thread that started it only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dblock::cli {

class Job {
 public:
  // Forks and execs `command` (found on PATH) with `environment` ("NAME=value" strings), in a new
  // process group (and a new cgroup unless `allow_cgroup` is false or it cannot be made), with
  // every signal at its default disposition and none blocked. If dblock dies first, the job's
  // processes get SIGTERM, and SIGKILL `kill_after` later (on Linux). Throws dblock::Error when
  // fork fails; an exec failure is reported by exec_errno() (the command has then been reaped and
  // nothing runs).
  Job(const std::vector<std::string>& command, const std::vector<std::string>& environment,
      bool allow_cgroup, std::chrono::milliseconds kill_after);
  ~Job();  // ends the guard; removes the cgroup (empty by then, or left for the kernel to clean up)
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // The exec's errno when the command could not be started, else 0.
  int exec_errno() const noexcept { return exec_errno_; }
  // "a cgroup (PATH)" or "a process group": where the job's processes are looked for.
  std::string isolation() const;

  // Reaps every exited child (the command and re-parented orphans) without waiting. Returns
  // the command's wait status once it has exited (and from then on).
  std::optional<int> reap();
  // Sends `sig` to every process of the job still running: the process group, the cgroup's
  // members and the orphans re-parented to dblock.
  void signal_all(int sig);
  // True while any process of the job is still running (reap() first, to forget the exited).
  bool anything_left();

 private:
  std::vector<pid_t> cgroup_members() const;
  std::vector<pid_t> orphans() const;  // dblock's children but the guard: the command, orphans
  void start_guard(std::chrono::milliseconds kill_after);

  pid_t pid_ = -1;
  pid_t guard_ = -1;  // the guard's pid, when there is one
  int exec_errno_ = 0;
  std::optional<int> status_;
  std::string cgroup_;  // directory; empty when none
};

}  // namespace dblock::cli
