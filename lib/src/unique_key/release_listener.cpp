#include "unique_key/release_listener.hpp"

#include "dblock/error.hpp"

namespace dblock::detail {

namespace {
constexpr auto kPollSlice = std::chrono::milliseconds(200);  // how often the thread checks stop
constexpr auto kReconnectDelay = std::chrono::milliseconds(500);
}  // namespace

ReleaseListener::ReleaseListener(ConnectionSource& source, std::string channel)
    : source_(source), channel_(std::move(channel)) {
  thread_ = std::thread([this] { run(); });
}

ReleaseListener::~ReleaseListener() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    for (auto& [key, state] : keys_) state.cv.notify_all();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReleaseListener::run() {
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    try {
      listen_once();
      return;  // stopped, or notifications are not available at all
    } catch (const Error&) {
      // Lost the session: waiters keep polling meanwhile; reconnect shortly.
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kReconnectDelay, [&] { return stop_; });
  }
}

void ReleaseListener::listen_once() {
  std::unique_ptr<Connection> conn = source_.open_dedicated();
  if (!conn || !conn->supports_notifications()) {
    available_ = false;
    return;
  }
  conn->listen(channel_);
  {
    // Notifications sent while no session listened never come back.
    std::lock_guard lock(mu_);
    for (auto& [key, state] : keys_) state.echoes = 0;
  }
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    auto notes = conn->wait_for_notifications(kPollSlice);
    std::lock_guard lock(mu_);
    for (const auto& n : notes) {
      auto it = keys_.find(n.payload);
      if (it == keys_.end()) continue;
      if (it->second.echoes > 0) {
        --it->second.echoes;  // a release made here: released() wakes its waiter
        continue;
      }
      it->second.wake = true;
      it->second.cv.notify_one();  // only one can win the key
    }
  }
}

void ReleaseListener::releasing(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it != keys_.end()) ++it->second.echoes;
}

void ReleaseListener::released(const std::string& key, bool freed) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  KeyState& state = it->second;
  if (!freed) {
    // No notification was sent (the release left holds), or none is known to have been.
    if (state.echoes > 0) --state.echoes;
    return;
  }
  state.wake = true;
  state.cv.notify_one();
}

ReleaseListener::Interest::Interest(ReleaseListener& listener, std::string key)
    : listener_(listener), key_(std::move(key)) {
  std::lock_guard lock(listener_.mu_);
  ++listener_.keys_[key_].interested;
}

ReleaseListener::Interest::~Interest() {
  std::lock_guard lock(listener_.mu_);
  auto it = listener_.keys_.find(key_);
  if (it != listener_.keys_.end() && --it->second.interested == 0) listener_.keys_.erase(it);
}

void ReleaseListener::Interest::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  state.cv.wait_for(lock, timeout, [&] { return listener_.stop_ || state.wake; });
  state.wake = false;  // taken: the other waiters of this key keep sleeping
}

}  // namespace dblock::detail
