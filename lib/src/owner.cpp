// SPDX-License-Identifier: Apache-2.0
#include "dblock/owner.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "dblock/error.hpp"
#include "random.hpp"

namespace dblock {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

}  // namespace

// Who this process is: redrawn after fork(), from the kernel's random source.
// Every acquire asks, so each thread keeps a copy for its process id and takes the mutex only
// when the id changed (its first call, or its first call in a child after fork()): a mutex on
// every call, held across getpid(), made threads queue on it. The id is read on every call, not
// counted in a pthread_atfork() handler: a child made by the raw clone() system call runs no
// such handler, and two processes sharing an instance would pass for one owner. The mutex is
// held across fork() (pthread_atfork), so a child never starts with it locked by a thread that
// did not come along: its first call would wait forever.
std::string process_instance() {
  static std::mutex mu;
  static pid_t pid = 0;
  static std::string instance;
  static const bool fork_safe = [] {
    ::pthread_atfork([] { mu.lock(); }, [] { mu.unlock(); }, [] { mu.unlock(); });
    return true;
  }();
  (void)fork_safe;
  thread_local pid_t seen = 0;
  thread_local std::string copy;
  const pid_t now = ::getpid();
  if (seen != now) {
    std::lock_guard lock(mu);
    if (pid != now) {
      pid = now;
      instance = std::to_string(pid) + "-" + detail::random_hex(16);
    }
    copy = instance;
    seen = now;
  }
  return copy;
}

Owner Owner::current_thread() {
  static const std::string host = host_name();
  // Linux reuses thread ids: a random part drawn once per thread keeps a later thread with the
  // same id from re-entering an earlier thread's lock. Drawn again in a forked child, whose
  // thread has an id of its own.
  thread_local pid_t drawn_in = 0;
  thread_local std::string thread;
  const pid_t pid = ::getpid();
  if (drawn_in != pid) {
    thread = "tid:" + std::to_string(::syscall(SYS_gettid)) + "-" + detail::random_hex(8);
    drawn_in = pid;
  }
  return Owner{host, process_instance(), thread};
}

Owner Owner::named(std::string_view name) {
  if (name.empty() || name.size() > 200) {
    throw Error(ErrorCode::kInvalidArgument,
                "an owner name must be 1 to 200 bytes; got " + std::to_string(name.size()));
  }
  Owner o = current_thread();
  o.thread = "name:" + std::string(name);
  return o;
}

std::string Owner::to_string() const { return host + "/" + process + "/" + thread; }

}  // namespace dblock
