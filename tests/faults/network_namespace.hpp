// SPDX-License-Identifier: Apache-2.0
// A network namespace joined to this one by a veth pair, with a firewall (nftables) inside that
// can drop every packet: a network that stops answering without closing anything. Needs root
// (CAP_NET_ADMIN) and the ip and nft programs; create() says why when the machine forbids it.
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace dblock::testing {

class NetworkNamespace {
 public:
  // A new namespace, or nullptr with the reason in `why_not` (the command that failed and its
  // message) when this machine does not allow one.
  static std::unique_ptr<NetworkNamespace> create(std::string* why_not);
  ~NetworkNamespace();  // deletes the namespace (and the veth pair with it)
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  // This side's address of the veth pair: what programs inside connect to.
  const std::string& host_address() const { return host_address_; }
  // Prepended to an argv, runs the program inside the namespace.
  std::vector<std::string> exec_prefix() const;
  // On: the namespace's firewall drops every packet in and out. Off: it lets them pass again.
  // Throws std::runtime_error when nft fails.
  void set_blackhole(bool on);

 private:
  NetworkNamespace() = default;

  std::string name_;
  std::string host_address_;
};

}  // namespace dblock::testing
