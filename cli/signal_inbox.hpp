// What wakes `dblock run`'s main thread: signals, read from a signalfd instead of handlers, and
// a pipe other threads write a byte to.
//
// Thread-safety: a SignalInbox is made and read by the main thread; Wakeup::notify() may be
// called from any thread.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

namespace dblock::cli {

inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Throws dblock::Error naming the call that failed and errno's text.
[[noreturn]] void throw_system_error(const char* what, int err);
[[noreturn]] inline void throw_system_error(const char* what) { throw_system_error(what, errno); }

// A file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe any thread may write a byte to, to wake the main thread's poll().
class Wakeup {
 public:
  Wakeup() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw_system_error("pipe2");
    read_.reset(fds[0]);
    write_.reset(fds[1]);
  }
  int fd() const noexcept { return read_.get(); }
  void notify() noexcept {
    char byte = 1;
    ssize_t n = ::write(write_.get(), &byte, 1);  // a full pipe already holds a wake-up
    (void)n;
  }
  void drain() noexcept {
    char buf[64];
    while (::read(read_.get(), buf, sizeof buf) > 0) {
    }
  }

 private:
  Fd read_;
  Fd write_;
};

// The forwarded signals and SIGCHLD, blocked in this thread and in every thread started after it
// (so the library's threads never take them) and read from a signalfd instead. The mask stays
// blocked to the end: `run` is the last thing the process does, and a signal arriving after CMD
// has exited must not change the exit status.
// SIGCHLD goes back to its default action first: dblock may have been started with it ignored
// (kept across exec), and then the kernel would reap the command unseen and `run` would wait
// for it forever.
class SignalInbox {
 public:
  SignalInbox() {
    ::signal(SIGCHLD, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kForwardedSignals) sigaddset(&set, sig);
    sigaddset(&set, SIGCHLD);
    if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
      throw_system_error("pthread_sigmask", rc);
    }
    fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (fd_.get() < 0) throw_system_error("signalfd");
  }
  int fd() const noexcept { return fd_.get(); }

  // The next signal received, if any.
  std::optional<signalfd_siginfo> next() {
    signalfd_siginfo info;
    if (::read(fd_.get(), &info, sizeof info) != sizeof info) return std::nullopt;
    return info;
  }
  // The first forwarded signal received (SIGCHLD is skipped), if any.
  std::optional<int> next_stop_signal() {
    while (auto info = next()) {
      if (info->ssi_signo != SIGCHLD) return static_cast<int>(info->ssi_signo);
    }
    return std::nullopt;
  }

 private:
  Fd fd_;
};

}  // namespace dblock::cli
