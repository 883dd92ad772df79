// SPDX-License-Identifier: Apache-2.0
// File descriptors for `dblock run`: an owning handle, and pipes whose ends are close-on-exec, so
// the command it runs inherits none of them.
//
// Thread-safety: an Fd is used by one thread at a time; open_pipe() may be called from any.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dblock::cli {

// A file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
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

// Makes a pipe, fds[0] its read end and fds[1] its write end, both close-on-exec (and
// non-blocking with `nonblocking`). Returns false, with errno set, when it could not.
// Linux makes it so at once (pipe2). Elsewhere the flags are set after pipe(), so a fork on
// another thread in between could pass the ends on to its program.
inline bool open_pipe(int fds[2], bool nonblocking) noexcept {
#if defined(__linux__) && !defined(DBLOCK_PORTABLE_FALLBACKS)
  return ::pipe2(fds, O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0)) == 0;
#else
  if (::pipe(fds) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    const int status = ::fcntl(fds[i], F_GETFL);
    if (::fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0 ||
        (nonblocking && (status < 0 || ::fcntl(fds[i], F_SETFL, status | O_NONBLOCK) != 0))) {
      const int err = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      errno = err;
      return false;
    }
  }
  return true;
#endif
}

}  // namespace dblock::cli
