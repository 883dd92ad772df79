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
      // "head\nkey": a waiter id holds no newline.
      const std::size_t split = n.payload.find('\n');
      if (split == std::string::npos) continue;  // not a release of this version's
      auto it = keys_.find(std::string_view(n.payload).substr(split + 1));
      if (it == keys_.end()) continue;
      if (it->second.echoes > 0) {
        --it->second.echoes;  // a release made here: released() wakes its waiter
        continue;
      }
      wake(it->second, n.payload.substr(0, split));
    }
  }
}

void ReleaseListener::wake(KeyState& state, const std::string& head) {
  if (head.empty()) {
    state.wake = true;
    state.wake_for.clear();
    state.cv.notify_one();  // only one can win the key
  } else if (state.queued.contains(head)) {
    state.wake = true;
    state.wake_for = head;
    state.cv.notify_all();  // the others see it is not theirs and sleep on
  }
  // A head queued elsewhere: its own process wakes it; no one here may take the key before it.
}

void ReleaseListener::releasing(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it != keys_.end()) ++it->second.echoes;
}

void ReleaseListener::released(const std::string& key, bool freed, const std::string& head) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  KeyState& state = it->second;
  if (!freed) {
    // No notification was sent (the release left holds), or none is known to have been.
    if (state.echoes > 0) --state.echoes;
    return;
  }
  wake(state, head);
}

ReleaseListener::Interest::Interest(ReleaseListener& listener, std::string key)
    : listener_(listener), key_(std::move(key)) {
  std::lock_guard lock(listener_.mu_);
  ++listener_.keys_[key_].interested;
}

ReleaseListener::Interest::~Interest() {
  std::lock_guard lock(listener_.mu_);
  auto it = listener_.keys_.find(key_);
  if (it == listener_.keys_.end()) return;
  KeyState& state = it->second;
  if (!waiter_id_.empty()) {
    state.queued.erase(state.queued.find(waiter_id_));
    if (state.wake && state.wake_for == waiter_id_) state.wake = false;  // no one else's
  }
  if (--state.interested == 0) listener_.keys_.erase(it);
}

void ReleaseListener::Interest::queued_as(const std::string& waiter_id) {
  std::lock_guard lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  if (!waiter_id_.empty()) state.queued.erase(state.queued.find(waiter_id_));
  waiter_id_ = waiter_id;
  state.queued.insert(waiter_id_);
}

void ReleaseListener::Interest::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  const auto mine = [&] {
    return state.wake && (state.wake_for.empty() || state.wake_for == waiter_id_);
  };
  state.cv.wait_for(lock, timeout, [&] { return listener_.stop_ || mine(); });
  if (mine()) state.wake = false;  // taken: the other waiters of this key keep sleeping
}

}  // namespace dblock::detail
