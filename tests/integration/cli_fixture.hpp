// SPDX-License-Identifier: Apache-2.0
// A fixture for tests of the `dblock` program against one database x driver pair: fresh tables
// under a prefix of the test's own, a key of its own, a scratch directory, and helpers to run
// the CLI with DBLOCK_URL set. Fails (never skips) when the pair's database is not configured.
//
// Thread-safety: each fixture is used by its test's thread.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "process.hpp"

namespace dblock::testing {

class CliFixture : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_STRNE(DBLOCK_CLI_PATH, "") << "the dblock CLI was not built";
    prefix_ = unique_name("r") + "_";
    key_ = unique_name("job");
    const char* text = std::getenv(backend().url_env.c_str());
    ASSERT_TRUE(text != nullptr && *text != '\0')
        << backend().url_env << " is not set; run scripts/test.sh";
    url_ = std::string(text) + (std::string(text).find('?') == std::string::npos ? "?" : "&") +
           "driver=" + backend().driver;
    auto conn = backend().connect();
    Migrator(*conn, TableNames(prefix_)).up();
    dir_ = std::filesystem::temp_directory_path() / unique_name("cli-run");
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    auto conn = backend().connect();
    backend().drop_tables_with_prefix(*conn, prefix_);
    std::filesystem::remove_all(dir_);
  }
  const Backend& backend() const { return GetParam(); }

  // argv for `dblock <subcommand> --prefix <prefix> <args...>`.
  std::vector<std::string> cli(const std::string& subcommand,
                               const std::vector<std::string>& args) const {
    std::vector<std::string> argv{DBLOCK_CLI_PATH, subcommand, "--prefix", prefix_};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  // argv for `dblock <subcommand> --prefix <prefix> --key <key_> <options...> -- sh -c <script>`
  // (`run`, `lead`).
  std::vector<std::string> command_sh(const std::string& subcommand, const std::string& script,
                                      const std::vector<std::string>& options = {}) const {
    std::vector<std::string> args{"--key", key_};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return cli(subcommand, args);
  }
  std::vector<std::string> run_sh(const std::string& script,
                                  const std::vector<std::string>& options = {}) const {
    return command_sh("run", script, options);
  }
  std::map<std::string, std::string> env(const std::string& url) const {
    return {{"DBLOCK_URL", url}};
  }
  std::map<std::string, std::string> env() const { return env(url_); }
  ProcessResult run(const std::vector<std::string>& argv) const { return run_process(argv, env()); }
  std::unique_ptr<ChildProcess> start(const std::vector<std::string>& argv) const {
    return std::make_unique<ChildProcess>(argv, env());
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  // The samples of a metrics file a `--prometheus FILE` option wrote: "name{labels}" -> value.
  static std::map<std::string, double> metric_samples(const std::string& path) {
    std::map<std::string, double> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const auto space = line.rfind(' ');
      out[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return out;
  }
  // Waits up to `timeout` for `path` to exist.
  static bool wait_for_file(const std::string& path,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!std::filesystem::exists(path)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  std::string prefix_;
  std::string key_;
  std::string url_;
  std::filesystem::path dir_;
};

}  // namespace dblock::testing
