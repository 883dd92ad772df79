// SPDX-License-Identifier: Apache-2.0
#include "skewed_clock.hpp"

#include <chrono>
#include <filesystem>

namespace dblock::testing {

namespace {
constexpr const char* kLibfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
}  // namespace

bool libfaketime_installed() { return std::filesystem::exists(kLibfaketime); }

std::map<std::string, std::string> wall_clock_off_by(const std::string& offset) {
  return {
      {"LD_PRELOAD", kLibfaketime}, {"FAKETIME", offset}, {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}};
}

double printed_wall_clock_skew(const std::string& output) {
  const long long wall = std::stoll(output.substr(output.find(" wall ") + 6));
  const long long ours = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  return static_cast<double>(wall - ours);
}

}  // namespace dblock::testing
