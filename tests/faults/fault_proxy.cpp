// SPDX-License-Identifier: Apache-2.0
#include "fault_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace dblock::testing {

namespace {

constexpr auto kDrainLimit = std::chrono::seconds(2);

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("fault proxy: " + what + ": " + std::strerror(errno));
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

int connect_to(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

FaultProxy::FaultProxy(std::string target_host, int target_port, const std::string& listen_host)
    : target_host_(std::move(target_host)), listen_host_(listen_host), target_port_(target_port) {
  if (target_host_.empty() || target_host_ == "localhost") target_host_ = "127.0.0.1";
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, listen_host_.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("fault proxy: not an IPv4 address: " + listen_host_);
  }
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::listen(listen_fd_, 128) != 0) fail("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    fail("getsockname");
  }
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) fail("pipe");
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  for (auto& p : pairs_) close_pair(p);
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

DatabaseUrl FaultProxy::through(DatabaseUrl url) const {
  url.host = listen_host_;
  url.port = port_;
  return url;
}

void FaultProxy::cut_after_request_containing(std::string needle, int times) {
  std::lock_guard lock(mu_);
  needle_ = std::move(needle);
  armed_ = times;
  drop_ = false;
}

void FaultProxy::drop_request_containing(std::string needle, int times) {
  std::lock_guard lock(mu_);
  needle_ = std::move(needle);
  armed_ = times;
  drop_ = true;
}

void FaultProxy::set_blackhole(bool on) {
  {
    std::lock_guard lock(mu_);
    blackhole_ = on;
  }
  wake();
}

void FaultProxy::close_all() {
  {
    std::lock_guard lock(mu_);
    close_all_ = true;
  }
  wake();
  // Wait until the proxy thread has done it, so callers can rely on it.
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(mu_);
      if (!close_all_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void FaultProxy::wake() {
  char c = 1;
  [[maybe_unused]] auto n = ::write(wake_pipe_[1], &c, 1);
}

void FaultProxy::close_pair(Pair& p) {
  if (p.client >= 0) ::close(p.client);
  if (p.server >= 0) ::close(p.server);
  p.client = p.server = -1;
}

bool FaultProxy::forward(int from, int to, bool client_to_server, Pair& p) {
  char buf[65536];
  ssize_t n = ::recv(from, buf, sizeof buf, 0);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  bool cut = false, drop = false;
  if (client_to_server) {
    std::lock_guard lock(mu_);
    if (armed_ > 0 && std::string_view(buf, static_cast<std::size_t>(n)).find(needle_) !=
                          std::string_view::npos) {
      --armed_;
      cut = true;
      drop = drop_;
    }
  }
  if (drop) {
    ++cuts_;
    return false;  // the caller closes both sides; the request is gone
  }
  if (!write_all(to, buf, static_cast<std::size_t>(n))) return false;
  if (cut) {
    // Nothing more is forwarded; the client's side closes once the server has answered.
    p.draining = true;
    p.drain_deadline = std::chrono::steady_clock::now() + kDrainLimit;
    ++cuts_;
  }
  return true;
}

void FaultProxy::run() {
  while (!stop_) {
    bool blackhole = false;
    {
      std::lock_guard lock(mu_);
      blackhole = blackhole_;
      if (close_all_) {
        for (auto& p : pairs_) close_pair(p);
        pairs_.clear();
        close_all_ = false;
      }
    }
    std::vector<pollfd> fds;
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({listen_fd_, static_cast<short>(blackhole ? 0 : POLLIN), 0});
    for (const auto& p : pairs_) {
      short events = blackhole ? 0 : POLLIN;
      fds.push_back({p.client, p.draining ? static_cast<short>(0) : events, 0});
      fds.push_back({p.server, p.draining ? static_cast<short>(POLLIN) : events, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), 50);
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_pipe_[0], drain, sizeof drain) > 0) {
      }
    }
    if (fds[1].revents & POLLIN) {
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        ++accepted_;
        int one = 1;
        ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int server = connect_to(target_host_, target_port_);
        if (server < 0) {
          ::close(client);
        } else {
          pairs_.push_back(Pair{client, server, false, {}});
        }
      }
    }
    const auto now = std::chrono::steady_clock::now();
    // fds[2 + 2i] and fds[3 + 2i] belong to pairs_[i] as it was before this round's accept.
    for (std::size_t i = 0; 2 * i + 3 < fds.size(); ++i) {
      Pair& p = pairs_[i];
      if (p.draining) {
        if (fds[2 * i + 3].revents & (POLLIN | POLLHUP | POLLERR)) {
          char buf[4096];
          if (::recv(p.server, buf, sizeof buf, 0) > 0) ++answered_after_cut_;  // dropped
          close_pair(p);  // counted first: the client learns of the cut only now
        } else if (now >= p.drain_deadline) {
          close_pair(p);
        }
        continue;
      }
      if (blackhole) continue;
      bool alive = true;
      if (fds[2 * i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
        alive = forward(p.client, p.server, true, p);
      }
      if (alive && !p.draining && (fds[2 * i + 3].revents & (POLLIN | POLLHUP | POLLERR))) {
        alive = forward(p.server, p.client, false, p);
      }
      if (!alive) close_pair(p);
    }
    std::erase_if(pairs_, [](const Pair& p) { return p.client < 0 && p.server < 0; });
  }
}

}  // namespace dblock::testing
