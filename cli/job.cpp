// SPDX-License-Identifier: Apache-2.0
#include "job.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
#define DBLOCK_JOB_LINUX 1  // cgroups, a child subreaper, a parent-death signal, execvpe
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#endif

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "common.hpp"
#include "dblock/error.hpp"
#include "fd.hpp"
#include "proc_files.hpp"

#ifndef DBLOCK_JOB_LINUX
extern char** environ;
#endif

namespace dblock::cli {

namespace {

constexpr int kExitNotFound = 127;

[[noreturn]] void throw_errno(const std::string& what, int err = errno) {
  throw Error(ErrorCode::kOther, what + " failed: " + std::strerror(err));
}

#ifdef DBLOCK_JOB_LINUX

bool is_cgroup2(const char* path) {
  struct statfs fs;
  return ::statfs(path, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

// Removes the cgroups earlier `dblock run`s left behind when they were killed before they could
// remove their own (SIGKILL, a crash): "dblock-run-<pid>" whose pid is gone. Only empty ones go
// (rmdir refuses the rest): processes still in one outlived their run and are left alone.
void sweep_stale_cgroups(const std::string& parent) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(parent.c_str()), ::closedir);
  if (dir == nullptr) return;
  constexpr std::string_view kPrefix = "dblock-run-";
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view digits = name.substr(kPrefix.size());
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) ::rmdir((parent + "/" + std::string(name)).c_str());
  }
}

// Makes a cgroup for the job under dblock's own cgroup v2, or returns "" when the machine does
// not allow it (no cgroup v2 mounted, not root, read-only).
std::string make_cgroup() {
  std::string root;
  for (const char* candidate : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (is_cgroup2(candidate)) {
      root = candidate;
      break;
    }
  }
  if (root.empty()) return "";
  std::istringstream in(read_small_file("/proc/self/cgroup"));
  std::string line, own;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  if (own.empty() || own[0] != '/') return "";
  if (own == "/") own.clear();
  sweep_stale_cgroups(root + own);
  std::string dir = root + own + "/dblock-run-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0) return "";
  return dir;
}

#else

std::string make_cgroup() { return ""; }  // cgroups are Linux's

#endif

// Writes `text` to a cgroup control file; false when it could not.
bool write_control(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The processes whose parent is dblock: the command and orphans re-parented to dblock.
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  const std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
  if (proc == nullptr) return out;
  while (dirent* entry = ::readdir(proc.get())) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    // "" when the process exited since readdir saw it.
    const std::string text = read_small_file(std::string("/proc/") + entry->d_name + "/stat");
    // pid (comm) state ppid ...; comm may hold spaces and parentheses, so read after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    pid_t ppid = 0;
    if (!(rest >> state >> ppid) || ppid != self || state == 'Z') continue;
    out.push_back(static_cast<pid_t>(std::stol(entry->d_name)));
  }
  return out;
}

// Every signal back to its default action and none blocked, as a freshly started program
// expects, whatever dblock was started with (SIGCHLD or SIGPIPE ignored, signals blocked).
// Async-signal-safe.
void reset_signals() {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL: reserved
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

Job::Job(const std::vector<std::string>& command, const std::vector<std::string>& environment,
         bool allow_cgroup, std::chrono::milliseconds kill_after) {
  std::vector<char*> argv, envp;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (const auto& var : environment) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
#ifdef DBLOCK_JOB_LINUX
  // Orphans of the job come to dblock, which finds, stops and reaps them.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw_errno("prctl(PR_SET_CHILD_SUBREAPER)");
#endif
  if (allow_cgroup) cgroup_ = make_cgroup();

  // `go` holds the child back until it is in its cgroup; `failed` carries an exec errno back
  // (closed on a successful exec).
  int go[2], failed[2];
  if (!open_pipe(go, false)) throw_errno("pipe");
  if (!open_pipe(failed, false)) {
    int err = errno;
    ::close(go[0]);
    ::close(go[1]);
    throw_errno("pipe", err);
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    int err = errno;
    for (int fd : {go[0], go[1], failed[0], failed[1]}) ::close(fd);
    throw_errno("fork", err);
  }
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec: other threads may have held locks at the fork.
    ::close(go[1]);
    ::close(failed[0]);
    ::setpgid(0, 0);
    reset_signals();
#ifdef DBLOCK_JOB_LINUX
    // If dblock dies without stopping the job (kill -9), stop the command: its lease expires.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(kExitFailure);
#else
    (void)parent;
#endif
    char byte = 0;
    if (::read(go[0], &byte, 1) != 1) ::_exit(kExitFailure);  // dblock gave up on it
#ifdef DBLOCK_JOB_LINUX
    ::execvpe(argv[0], argv.data(), envp.data());
#else
    environ = envp.data();  // execvp() searches PATH as execvpe() does, with this environment
    ::execvp(argv[0], argv.data());
#endif
    int err = errno;
    ssize_t n = ::write(failed[1], &err, sizeof err);
    (void)n;
    ::_exit(kExitNotFound);
  }
  ::close(go[0]);
  ::close(failed[1]);
  ::setpgid(pid_, pid_);  // as the child does itself: whichever runs first
  if (!cgroup_.empty() && !write_control(cgroup_ + "/cgroup.procs", std::to_string(pid_))) {
    ::rmdir(cgroup_.c_str());
    cgroup_.clear();
  }
  char byte = 1;
  ssize_t n = ::write(go[1], &byte, 1);
  (void)n;
  ::close(go[1]);
  int err = 0;
  do {
    n = ::read(failed[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(failed[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    exec_errno_ = err;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    status_ = status;
    return;
  }
  start_guard(kill_after);
}

void Job::start_guard(std::chrono::milliseconds kill_after) {
#ifdef DBLOCK_JOB_LINUX
  // Everything the guard uses is made before the fork: after it, only async-signal-safe calls.
  const pid_t parent = ::getpid();
  const pid_t group = pid_;
  const std::string kill_file = cgroup_.empty() ? std::string() : cgroup_ + "/cgroup.kill";
  timespec pause{static_cast<time_t>(kill_after.count() / 1000),
                 static_cast<long>(kill_after.count() % 1000) * 1000000L};
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  const pid_t guard = ::fork();
  if (guard < 0) return;  // no guard: the command still gets its own parent-death signal
  if (guard == 0) {
    ::sigprocmask(SIG_BLOCK, &term, nullptr);
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) ::_exit(kExitFailure);
      // dblock's connections and descriptors are not the guard's to keep open.
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
      for (int fd = 3; fd < 4096; ++fd) ::close(fd);
    // SIGTERM comes when dblock dies (or from someone else: then dblock is still there).
    while (::getppid() == parent) {
      int sig = 0;
      ::sigwait(&term, &sig);
    }
    ::kill(-group, SIGTERM);
    while (::nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
    if (!kill_file.empty()) {
      const int fd = ::open(kill_file.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd >= 0) {
        ssize_t n = ::write(fd, "1", 1);
        (void)n;
        ::close(fd);
      }
    }
    ::kill(-group, SIGKILL);
    ::_exit(0);
  }
  guard_ = guard;
#else
  (void)kill_after;
#endif
}

Job::~Job() {
  if (guard_ > 0) {
    ::kill(guard_, SIGKILL);
    ::waitpid(guard_, nullptr, 0);
  }
  if (cgroup_.empty()) return;
  // The last members may take a moment to leave after they were reaped.
  for (int attempt = 0; attempt < 50 && ::rmdir(cgroup_.c_str()) != 0 && errno == EBUSY;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Job::isolation() const {
  return cgroup_.empty() ? "a process group" : "a cgroup (" + cgroup_ + ")";
}

std::optional<int> Job::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == pid_) status_ = status;
    if (pid == guard_) guard_ = -1;  // killed by someone else: the job runs on unguarded
  }
  return status_;
}

std::vector<pid_t> Job::orphans() const {
  std::vector<pid_t> out = children_of_this_process();
  std::erase(out, guard_);
  return out;
}

std::vector<pid_t> Job::cgroup_members() const {
  std::vector<pid_t> out;
  if (cgroup_.empty()) return out;
  std::istringstream in(read_small_file(cgroup_ + "/cgroup.procs"));
  pid_t pid;
  while (in >> pid) out.push_back(pid);
  return out;
}

void Job::signal_all(int sig) {
  if (sig == SIGKILL && !cgroup_.empty()) write_control(cgroup_ + "/cgroup.kill", "1");
  for (pid_t pid : cgroup_members()) ::kill(pid, sig);
  // The group outlives its leader while members remain; its id is not reused meanwhile.
  ::kill(-pid_, sig);
  for (pid_t pid : orphans()) ::kill(pid, sig);
}

bool Job::anything_left() {
  reap();
  if (!cgroup_members().empty()) return true;
  if (::kill(-pid_, 0) == 0 || errno == EPERM) return true;
  return !orphans().empty();
}

}  // namespace dblock::cli
