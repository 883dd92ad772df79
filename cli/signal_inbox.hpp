// SPDX-License-Identifier: Apache-2.0
// What wakes the main thread of `dblock run`, `lead` and `locks --watch`: signals, read from a
// file descriptor instead of handlers, and a pipe other threads write a byte to.
//
// The forwarded signals and SIGCHLD are blocked in every thread. On Linux they are read from a
// signalfd. Elsewhere (and in a build with -DDBLOCK_PORTABLE_FALLBACKS, which compiles this on
// Linux to test it) a thread of the inbox's own takes each with sigwait() and writes its number
// to a pipe, the self-pipe pattern without a signal handler.
//
// Thread-safety: a SignalInbox is made and read by the main thread; Wakeup::notify() may be
// called from any thread.
#pragma once

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>

#include "fd.hpp"

namespace dblock::cli {

inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Throws dblock::Error naming the call that failed and errno's text.
[[noreturn]] void throw_system_error(const char* what, int err);
[[noreturn]] inline void throw_system_error(const char* what) { throw_system_error(what, errno); }

// A pipe any thread may write a byte to, to wake the main thread's poll().
class Wakeup {
 public:
  Wakeup();
  int fd() const noexcept { return read_.get(); }
  void notify() noexcept;
  void drain() noexcept;

 private:
  Fd read_;
  Fd write_;
};

// The forwarded signals and SIGCHLD, blocked in this thread and in every thread started after it
// (so the library's threads never take them) and read from fd() instead. The mask stays
// blocked to the end: `run` is the last thing the process does, and a signal arriving after CMD
// has exited must not change the exit status.
// SIGCHLD goes back to its default action first: dblock may have been started with it ignored
// (kept across exec), and then the kernel would reap the command unseen and `run` would wait
// for it forever.
class SignalInbox {
 public:
  SignalInbox();
  ~SignalInbox();
  SignalInbox(const SignalInbox&) = delete;
  SignalInbox& operator=(const SignalInbox&) = delete;

  // Readable when a signal has arrived.
  int fd() const noexcept { return fd_.get(); }

  // The number of the next signal received, if any.
  std::optional<int> next();
  // The first forwarded signal received (SIGCHLD is skipped), if any.
  std::optional<int> next_stop_signal();

 private:
  sigset_t set_;
  Fd fd_;  // the signalfd, or the read end of the pipe the signals are written to
#if !defined(__linux__) || defined(DBLOCK_PORTABLE_FALLBACKS)
  void take_signals() noexcept;
  Fd write_;
  std::atomic<bool> stopping_{false};
  std::thread taker_;
#endif
};

}  // namespace dblock::cli
