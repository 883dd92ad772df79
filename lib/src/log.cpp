// SPDX-License-Identifier: Apache-2.0
#include "log.hpp"

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace dblock {

namespace {

struct Hook {
  std::atomic<bool> installed{false};
  std::shared_mutex mu;  // writers: set_log_handler; readers: each message
  std::shared_ptr<const LogHandler> handler;
};

Hook& hook() {
  static Hook* h = new Hook;  // never destroyed: threads may log during static destruction
  return *h;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

void set_log_handler(LogHandler handler) {
  Hook& h = hook();
  std::shared_ptr<const LogHandler> next;
  if (handler) next = std::make_shared<const LogHandler>(std::move(handler));
  std::unique_lock lock(h.mu);  // waits for the messages being delivered to the old handler
  h.handler = std::move(next);
  h.installed.store(h.handler != nullptr, std::memory_order_relaxed);
}

namespace detail {

bool logging() noexcept { return hook().installed.load(std::memory_order_relaxed); }

void log(LogLevel level, std::string_view message) noexcept {
  Hook& h = hook();
  std::shared_lock lock(h.mu);
  if (!h.handler) return;
  try {
    (*h.handler)(level, message);
  } catch (...) {
    // A handler's failure must not reach the thread that logged.
  }
}

}  // namespace detail

}  // namespace dblock
