// SPDX-License-Identifier: Apache-2.0
#include "prometheus.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dblock/error.hpp"

namespace dblock::cli {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error(ErrorCode::kOther,
              "cannot write metrics file " + path + ": " + what + ": " + std::strerror(err));
}

std::string format_value(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

double unix_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::map<std::string, double> read_metric_samples(const std::string& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos || space == 0) continue;
    try {
      std::size_t used = 0;
      double v = std::stod(line.substr(space + 1), &used);
      if (used == line.size() - space - 1) out[line.substr(0, space)] = v;
    } catch (const std::exception&) {
      // not a sample line: skip it
    }
  }
  return out;
}

void write_metrics_file(const std::string& path, const Metrics& metrics) {
  std::ostringstream text;
  for (const auto& [name, family] : metrics) {
    text << "# HELP " << name << ' ' << family.help << '\n';
    text << "# TYPE " << name << ' ' << family.type << '\n';
    for (const auto& [labels, value] : family.series) {
      text << name;
      if (!labels.empty()) text << '{' << labels << '}';
      text << ' ' << format_value(value) << '\n';
    }
  }
  const std::string data = text.str();

  // Same directory, so rename() is atomic; a name the collector ignores (it reads *.prom).
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "open " + tmp, errno);
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, "write " + tmp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  int err = ::fsync(fd) == 0 ? 0 : errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(path, "flush " + tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    fail(path, "rename " + tmp, err);
  }
}

}  // namespace dblock::cli
