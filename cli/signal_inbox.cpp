// SPDX-License-Identifier: Apache-2.0
#include "signal_inbox.hpp"

#include <pthread.h>
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
#include <sys/signalfd.h>
#endif

#include <cstring>
#include <string>

#include "dblock/error.hpp"

namespace dblock::cli {

void throw_system_error(const char* what, int err) {
  throw Error(ErrorCode::kOther, std::string(what) + " failed: " + std::strerror(err));
}

Wakeup::Wakeup() {
  int fds[2];
  if (!open_pipe(fds, true)) throw_system_error("pipe");
  read_.reset(fds[0]);
  write_.reset(fds[1]);
}

void Wakeup::notify() noexcept {
  char byte = 1;
  ssize_t n = ::write(write_.get(), &byte, 1);  // a full pipe already holds a wake-up
  (void)n;
}

void Wakeup::drain() noexcept {
  char buf[64];
  while (::read(read_.get(), buf, sizeof buf) > 0) {
  }
}

SignalInbox::SignalInbox() {
  ::signal(SIGCHLD, SIG_DFL);
  sigemptyset(&set_);
  for (int sig : kForwardedSignals) sigaddset(&set_, sig);
  sigaddset(&set_, SIGCHLD);
  if (int rc = ::pthread_sigmask(SIG_BLOCK, &set_, nullptr); rc != 0) {
    throw_system_error("pthread_sigmask", rc);
  }
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
  fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (fd_.get() < 0) throw_system_error("signalfd");
#else
  int fds[2];
  if (!open_pipe(fds, true)) throw_system_error("pipe");
  fd_.reset(fds[0]);
  write_.reset(fds[1]);
  taker_ = std::thread([this] { take_signals(); });  // inherits the blocked mask sigwait needs
#endif
}

#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)

SignalInbox::~SignalInbox() = default;

std::optional<int> SignalInbox::next() {
  signalfd_siginfo info;
  if (::read(fd_.get(), &info, sizeof info) != sizeof info) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

#else

SignalInbox::~SignalInbox() {
  stopping_ = true;
  ::pthread_kill(taker_.native_handle(), SIGCHLD);  // ends its sigwait()
  taker_.join();
}

void SignalInbox::take_signals() noexcept {
  for (;;) {
    int sig = 0;
    if (::sigwait(&set_, &sig) != 0) continue;
    if (stopping_) return;
    // Signal numbers fit a byte. A full pipe (64 KiB of signals the main thread has not read)
    // drops this one.
    const auto byte = static_cast<unsigned char>(sig);
    ssize_t n = ::write(write_.get(), &byte, 1);
    (void)n;
  }
}

std::optional<int> SignalInbox::next() {
  unsigned char byte = 0;
  if (::read(fd_.get(), &byte, 1) != 1) return std::nullopt;
  return static_cast<int>(byte);
}

#endif

std::optional<int> SignalInbox::next_stop_signal() {
  while (auto sig = next()) {
    if (*sig != SIGCHLD) return sig;
  }
  return std::nullopt;
}

}  // namespace dblock::cli
