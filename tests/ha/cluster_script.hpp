// SPDX-License-Identifier: Apache-2.0
// A database cluster of the ha suite, built and driven by one of the project's scripts
// (scripts/ha-galera.sh, scripts/ha-postgres.sh) in a state directory of its own: start in the
// constructor, stop in the destructor, and any other subcommand (kill, rejoin, promote, ...) in
// between. The script's `env` output (export NAME='value' lines) is read after start and after
// every command, so URLs that change (a promoted standby) are seen.
//
// Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dblock::testing {

class ClusterScript {
 public:
  // Runs `<script> start <start_args...>` with DBLOCK_HA_<dir_variable>=<a fresh directory>.
  // Throws std::runtime_error with the script's output when it fails: a test that cannot build
  // its cluster fails.
  ClusterScript(std::string script, std::string dir_variable,
                std::vector<std::string> start_args = {});
  ~ClusterScript();  // `stop`; errors are printed, never thrown
  ClusterScript(const ClusterScript&) = delete;
  ClusterScript& operator=(const ClusterScript&) = delete;

  // Runs `<script> args...`; throws std::runtime_error with its output on a non-zero exit.
  std::string run(const std::vector<std::string>& args);
  // A variable of the script's `env` output; throws std::runtime_error when absent.
  const std::string& env(const std::string& name) const;

 private:
  void read_env();

  std::string script_;
  std::map<std::string, std::string> base_env_;
  std::map<std::string, std::string> env_;
};

// The ha suite's scenario length in seconds: DBLOCK_HA_SECONDS, default `fallback` (the short
// CI mode; set it higher for the long run).
int ha_seconds(int fallback);

}  // namespace dblock::testing
