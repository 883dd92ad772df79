// SPDX-License-Identifier: Apache-2.0
#include "proc_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dblock::cli {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;  // the end, or an error (ESRCH: the process exited meanwhile)
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = read_all(fd);
  ::close(fd);
  return text;
}

}  // namespace dblock::cli
