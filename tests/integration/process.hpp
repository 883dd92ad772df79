// SPDX-License-Identifier: Apache-2.0
// Runs a child program (the `dblock` CLI) and collects its exit code and output, so tests can
// check what a user at a shell would see. Several may run at once.
//
// Thread-safety: each ChildProcess is used by one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace dblock::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

class ChildProcess {
 public:
  // Starts argv[0] with argv, the current environment plus `env` (a value of "" unsets).
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Waits for the child to exit and returns what it did.
  ProcessResult wait();
  // Sends a signal to the running child.
  void signal(int sig) const;
  pid_t pid() const noexcept { return pid_; }
  // What the child has written to stdout so far.
  std::string output_so_far() const;
  // Waits until stdout contains `text` (true) or `timeout` passes (false).
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  std::string out_path_;
  std::string err_path_;
};

// Checks what a user sees when `dblock` fails: exit `code`, nothing on stdout, one stderr line
// "dblock: ..." containing `fragment`, and never `secret` (the password).
void expect_one_line_error(const ProcessResult& r, int code, const std::string& fragment,
                           const std::string& secret);

// The whole content of a text file; empty when it cannot be read.
std::string read_text_file(const std::string& path);

// Starts and waits.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {});

}  // namespace dblock::testing
