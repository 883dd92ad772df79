// SPDX-License-Identifier: Apache-2.0
#include "network_namespace.hpp"

#include <cstdio>
#include <random>
#include <stdexcept>

#include "process.hpp"

namespace dblock::testing {

namespace {

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kNft = "/usr/sbin/nft";
constexpr const char* kTable = "dblock_blackhole";

// Runs argv; the failure's description, or empty on success.
std::string run(const std::vector<std::string>& argv) {
  auto r = run_process(argv);
  if (r.exit_code == 0) return {};
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  std::string message = r.err.empty() ? r.out : r.err;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return "`" + command + "` exited " + std::to_string(r.exit_code) + ": " + message;
}

}  // namespace

std::unique_ptr<NetworkNamespace> NetworkNamespace::create(std::string* why_not) {
  std::mt19937 rng{std::random_device{}()};
  const unsigned tag = rng() & 0xffffff;
  const unsigned third = tag & 0xff, fourth = ((tag >> 8) & 0x3f) * 4;  // a /30 of 10.231/16
  char hex[16];
  std::snprintf(hex, sizeof hex, "%06x", tag);
  std::unique_ptr<NetworkNamespace> ns(new NetworkNamespace());
  ns->name_ = std::string("dblock-") + hex;
  const std::string outside = std::string("vdbo") + hex, inside = std::string("vdbi") + hex;
  const std::string prefix = "10.231." + std::to_string(third) + ".";
  ns->host_address_ = prefix + std::to_string(fourth + 1);
  const std::string inside_address = prefix + std::to_string(fourth + 2) + "/30";
  for (const auto& a : {std::vector<std::string>{kIp, "-V"}, {kNft, "--version"}}) {
    if (auto e = run(a); !e.empty()) {
      *why_not = e + " (install iproute2 and nftables: scripts/install-deps.sh)";
      return nullptr;
    }
  }
  if (auto e = run({kIp, "netns", "add", ns->name_}); !e.empty()) {
    *why_not = e;
    ns->name_.clear();  // nothing to delete
    return nullptr;
  }
  const std::vector<std::vector<std::string>> steps = {
      {kIp, "link", "add", outside, "type", "veth", "peer", "name", inside},
      {kIp, "link", "set", inside, "netns", ns->name_},
      {kIp, "addr", "add", ns->host_address_ + "/30", "dev", outside},
      {kIp, "link", "set", outside, "up"},
      {kIp, "-n", ns->name_, "addr", "add", inside_address, "dev", inside},
      {kIp, "-n", ns->name_, "link", "set", inside, "up"},
      {kIp, "-n", ns->name_, "link", "set", "lo", "up"},
      {kIp, "netns", "exec", ns->name_, kNft, "add", "table", "inet", kTable},
  };
  for (const auto& step : steps) {
    if (auto e = run(step); !e.empty()) {
      *why_not = e;
      return nullptr;  // the destructor deletes the namespace and the veth pair
    }
  }
  return ns;
}

NetworkNamespace::~NetworkNamespace() {
  if (!name_.empty()) run({kIp, "netns", "del", name_});
}

std::vector<std::string> NetworkNamespace::exec_prefix() const {
  return {kIp, "netns", "exec", name_};
}

void NetworkNamespace::set_blackhole(bool on) {
  std::vector<std::vector<std::string>> steps;
  if (on) {
    for (const char* hook : {"input", "output"}) {
      steps.push_back({kIp, "netns", "exec", name_, kNft, "add", "chain", "inet", kTable, hook,
                       std::string("{ type filter hook ") + hook + " priority 0; policy drop; }"});
    }
  } else {
    for (const char* hook : {"input", "output"}) {
      steps.push_back({kIp, "netns", "exec", name_, kNft, "delete", "chain", "inet", kTable, hook});
    }
  }
  for (const auto& step : steps) {
    if (auto e = run(step); !e.empty()) throw std::runtime_error(e);
  }
}

}  // namespace dblock::testing
