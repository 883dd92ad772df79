// SPDX-License-Identifier: Apache-2.0
#include "cluster_script.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "process.hpp"

namespace dblock::testing {

namespace {

std::string describe(const std::vector<std::string>& argv, const ProcessResult& r) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd + " exited " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
}

}  // namespace

ClusterScript::ClusterScript(std::string script, std::string dir_variable,
                             std::vector<std::string> start_args)
    : script_(std::move(script)) {
  const char* tmp = std::getenv("TMPDIR");
  base_env_["DBLOCK_HA_" + dir_variable] = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                                           "/dblock-ha-" + std::to_string(::getpid()) + "-" +
                                           dir_variable;
  std::vector<std::string> args{"start"};
  args.insert(args.end(), start_args.begin(), start_args.end());
  try {
    run(args);
  } catch (...) {
    run_process({script_, "stop"}, base_env_);
    throw;
  }
}

ClusterScript::~ClusterScript() {
  ProcessResult r = run_process({script_, "stop"}, base_env_);
  if (r.exit_code != 0) std::fprintf(stderr, "%s\n", describe({script_, "stop"}, r).c_str());
}

std::string ClusterScript::run(const std::vector<std::string>& args) {
  std::vector<std::string> argv{script_};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, base_env_);
  if (r.exit_code != 0) throw std::runtime_error(describe(argv, r));
  read_env();
  return r.out;
}

void ClusterScript::read_env() {
  ProcessResult r = run_process({script_, "env"}, base_env_);
  if (r.exit_code != 0) throw std::runtime_error(describe({script_, "env"}, r));
  env_.clear();
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("export ", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      value = value.substr(1, value.size() - 2);
    }
    env_[line.substr(7, eq - 7)] = value;
  }
}

const std::string& ClusterScript::env(const std::string& name) const {
  auto it = env_.find(name);
  if (it == env_.end()) throw std::runtime_error(script_ + " env printed no " + name);
  return it->second;
}

int ha_seconds(int fallback) {
  const char* s = std::getenv("DBLOCK_HA_SECONDS");
  if (s == nullptr || *s == '\0') return fallback;
  int v = std::atoi(s);
  if (v < 1) throw std::runtime_error("DBLOCK_HA_SECONDS must be a positive number of seconds");
  return v;
}

}  // namespace dblock::testing
