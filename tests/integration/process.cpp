// SPDX-License-Identifier: Apache-2.0
#include "process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dblock::testing {

namespace {
std::string temp_path(const char* what) {
  std::string templ = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                      "/dblock-test-" + what + "-XXXXXX";
  int fd = ::mkstemp(templ.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return templ;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env)
    : out_path_(temp_path("out")), err_path_(temp_path("err")) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    for (const auto& [k, v] : env) {
      if (v.empty()) {
        ::unsetenv(k.c_str());
      } else {
        ::setenv(k.c_str(), v.c_str(), 1);
      }
    }
    int out = ::open(out_path_.c_str(), O_WRONLY | O_TRUNC);
    int err = ::open(err_path_.c_str(), O_WRONLY | O_TRUNC);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::dup2(in, 0);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  // A test that failed half-way may leave a child that never ends on its own (a `dblock run`
  // of an endless script): give it a while to exit, then kill it, so the test fails instead of
  // hanging until ctest's timeout.
  for (int i = 0; pid_ > 0 && i < 300; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    ::usleep(100 * 1000);
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

ProcessResult ChildProcess::wait() {
  ProcessResult r;
  int status = 0;
  if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_ = -1;
  r.out = read_text_file(out_path_);
  r.err = read_text_file(err_path_);
  return r;
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::string ChildProcess::output_so_far() const { return read_text_file(out_path_); }

bool ChildProcess::wait_for_output(const std::string& text,
                                   std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (output_so_far().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return output_so_far().find(text) != std::string::npos;
}

void expect_one_line_error(const ProcessResult& r, int code, const std::string& fragment,
                           const std::string& secret) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_EQ(r.err.rfind("dblock: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  if (!secret.empty()) {
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "password leaked: " << r.err;
  }
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env) {
  ChildProcess p(argv, env);
  return p.wait();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace dblock::testing
