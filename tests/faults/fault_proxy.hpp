// SPDX-License-Identifier: Apache-2.0
// A loopback TCP forwarder that stands between a database client and its server and breaks the
// connection on command: it cuts a connection right after forwarding a chosen request, before
// the server's reply can reach the client (a lost reply), or stops forwarding in both
// directions while keeping every socket open (a network blackhole). One thread, poll().
//
// Point a client at it by rewriting its URL (through()). The proxy forwards bytes only; it knows
// nothing of the protocols, so requests are picked by a byte string they contain (a lock key,
// which both PostgreSQL and MySQL send as plain bytes among a statement's parameters).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dblock/url.hpp"

namespace dblock::testing {

class FaultProxy {
 public:
  // Listens on listen_host (an IPv4 address; a free port) and forwards to
  // target_host:target_port.
  FaultProxy(std::string target_host, int target_port,
             const std::string& listen_host = "127.0.0.1");
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const noexcept { return port_; }
  const std::string& listen_host() const noexcept { return listen_host_; }
  // `url` with its host and port replaced by the proxy's.
  DatabaseUrl through(DatabaseUrl url) const;

  // Arms a cut: the next client->server chunk containing `needle` is forwarded; then nothing
  // more is, and once the server answers (or two seconds pass) its reply is dropped and both
  // sides of that connection are closed. The client thus loses the reply of a statement the
  // server has run.
  // `times` > 1 cuts as many such requests in a row (a retry's too).
  void cut_after_request_containing(std::string needle, int times = 1);
  // Arms a drop: the next client->server chunk containing `needle` is not forwarded, and both
  // sides of that connection are closed at once. The server never sees the request (a statement
  // lost on the way, as when the server crashes before reading it). Counted in cuts().
  void drop_request_containing(std::string needle, int times = 1);
  // Connections cut so far by armed cuts, and how many of those saw the server answer after
  // the cut (proof that the server applied the request whose reply was lost).
  int cuts() const noexcept { return cuts_.load(); }
  int answered_after_cut() const noexcept { return answered_after_cut_.load(); }

  // On: forward nothing and accept nothing, keep every socket open. Off: forward again.
  void set_blackhole(bool on);
  // Closes every connection now (both sides).
  void close_all();
  // Connections accepted so far.
  int accepted() const noexcept { return accepted_.load(); }

 private:
  struct Pair {
    int client = -1;
    int server = -1;
    // After an armed cut: forward nothing, wait for the server's reply, then close both.
    bool draining = false;
    std::chrono::steady_clock::time_point drain_deadline{};
  };

  void run();
  void wake();
  void close_pair(Pair& p);
  // Forwards what `from` has to `to`; false when the connection ended.
  bool forward(int from, int to, bool client_to_server, Pair& p);

  std::string target_host_;
  std::string listen_host_;
  int target_port_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;

  std::mutex mu_;  // guards needle_, armed_, drop_, blackhole_, close_all_
  std::string needle_;
  int armed_ = 0;      // cuts still to make
  bool drop_ = false;  // the armed cuts drop the request instead of forwarding it
  bool blackhole_ = false;
  bool close_all_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> cuts_{0};
  std::atomic<int> answered_after_cut_{0};
  std::atomic<int> accepted_{0};
  std::vector<Pair> pairs_;  // the proxy thread's only
  std::thread thread_;
};

}  // namespace dblock::testing
