// SPDX-License-Identifier: Apache-2.0
#include "unique_key/release_listener.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include "dblock/error.hpp"
#include "log.hpp"

namespace dblock::detail {

namespace {
constexpr auto kPollSlice = std::chrono::milliseconds(200);  // how often the thread checks stop
constexpr auto kReconnectDelay = std::chrono::milliseconds(500);
}  // namespace

ReleaseListener::ReleaseListener(ConnectionSource& source, std::string channel, bool listen)
    : source_(source), channel_(std::move(channel)), listen_(listen) {}

void ReleaseListener::start() {
  if (listen_) thread_ = std::thread([this] { run(); });
}

ReleaseListener::~ReleaseListener() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    for (auto& [key, state] : keys_) {
      for (Interest* waiter : state.asleep) waiter->cv_.notify_one();
    }
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
      listening_ = false;
      return;  // stopped, or notifications are not available at all
    } catch (const Error& e) {
      // Lost the session: waiters keep polling meanwhile; reconnect shortly.
      listening_ = false;
      lost_session_ = true;
      if (logging()) {
        log(LogLevel::kWarning, "the session listening on '" + channel_ + "' for releases ended (" +
                                    e.what() +
                                    "); waiters poll until it is back; reconnecting in " +
                                    std::to_string(kReconnectDelay.count()) + " ms");
      }
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, kReconnectDelay, [&] { return stop_; });
  }
}

void ReleaseListener::listen_once() {
  std::unique_ptr<Connection> conn = source_.open_dedicated();
  if (!conn || !conn->supports_notifications()) return;
  conn->listen(channel_);
  {
    // Notifications sent while no session listened never come back: a release made before the
    // LISTEN (the first, which start() sends while the first waiters already sleep, or one after
    // a lost session) freed its key unheard. Every waiter of this process tries once more now.
    std::lock_guard lock(mu_);
    listening_ = true;
    for (auto& [key, state] : keys_) {
      state.echoes = 0;
      wake_all(state);
    }
  }
  if (lost_session_ && logging()) {
    log(LogLevel::kInfo, "listening on '" + channel_ + "' for releases again");
  }
  lost_session_ = false;
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
      std::string head = n.payload.substr(0, split);
      std::optional<Grant> grant = parse_head(head);
      wake(it->second, head, grant);
    }
  }
}

std::optional<ReleaseListener::Grant> ReleaseListener::parse_head(std::string& head) {
  const std::size_t first = head.find(' ');
  if (first == std::string::npos) return std::nullopt;
  std::int64_t token = 0;
  std::int64_t sent_us = 0;
  const char* end = head.data() + head.size();
  auto [after_token, error] = std::from_chars(head.data() + first + 1, end, token);
  const bool parsed = error == std::errc() && after_token != end && *after_token == ' ' &&
                      std::from_chars(after_token + 1, end, sent_us).ptr == end;
  head.resize(first);
  if (!parsed) return std::nullopt;  // not this version's: a wake-up only
  return Grant::granted(token, sent_us);
}

ReleaseListener::Interest* ReleaseListener::longest_asleep(const KeyState& state,
                                                           const std::string& head) {
  // A waiter woken already, being handed the key, or given it, is no longer a candidate.
  const auto candidate = [&](const Interest* w) {
    return !w->woken_ && w->hand_over_ != Interest::HandOver::kClaimed &&
           w->hand_over_ != Interest::HandOver::kGranted && (head.empty() || w->waiter_id_ == head);
  };
  Interest* chosen = nullptr;
  for (Interest* w : state.asleep) {
    if (candidate(w) && (chosen == nullptr || w->arrival_ < chosen->arrival_)) chosen = w;
  }
  return chosen;
}

void ReleaseListener::rouse(Interest& waiter) {
  waiter.woken_ = true;
  if (waiter.nudge_) {
    waiter.nudge_();
  } else {
    waiter.cv_.notify_one();
  }
}

void ReleaseListener::wake(KeyState& state, const std::string& head, std::optional<Grant> grant) {
  // Only one waiter can win the key: waking more would only add failed tries.
  Interest* chosen = longest_asleep(state, head);
  if (grant && head.empty()) grant.reset();  // a grant names its waiter
  if (chosen != nullptr) {
    if (grant) {
      chosen->hand_over_ = Interest::HandOver::kGranted;
      chosen->grant_ = *grant;
    }
    rouse(*chosen);
  } else if (head.empty() || state.queued.contains(head)) {
    // No one to wake asleep here now: the next to sleep (the head, if it names one) takes it.
    state.wake = true;
    state.wake_for = head;
    state.grant = grant;
  }
  // A head queued elsewhere: its own process wakes it; no one here may take the key before it.
}

void ReleaseListener::wake_all(KeyState& state) {
  for (Interest* w : state.asleep) {
    if (w->hand_over_ == Interest::HandOver::kClaimed ||
        w->hand_over_ == Interest::HandOver::kGranted) {
      continue;  // being handed the key, or given it already
    }
    rouse(*w);
  }
  // And a waiter between its try and its sleep tries again at once.
  state.wake = true;
  state.wake_for.clear();
  state.grant.reset();  // the head's next try finds a grant by its lease id
}

void ReleaseListener::releasing(const std::string& key) {
  if (!listen_) return;  // no notification comes back (before start(), listen_once resets it)
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it != keys_.end()) ++it->second.echoes;
}

ReleaseListener::Interest* ReleaseListener::claim_offer(const std::string& key,
                                                        const Owner& releaser, bool fair) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return nullptr;
  KeyState& state = it->second;
  if (!fair && state.handed_in_a_row >= kMaxHandOvers) {
    state.handed_in_a_row = 0;
    state.shared = true;
    return nullptr;
  }
  const auto now = std::chrono::steady_clock::now();
  Interest* chosen = nullptr;
  for (Interest* waiter : state.asleep) {
    // One whose time is up is about to wake and try by itself: claiming it would keep it
    // waiting for the hand-over past its deadline.
    if (waiter->hand_over_ != Interest::HandOver::kOffered || waiter->woken_ ||
        waiter->deadline_ <= now || waiter->lease_->owner == releaser ||
        (fair && waiter->waiter_id_.empty())) {
      continue;
    }
    const bool before = chosen == nullptr ||
                        (fair ? waiter->seq_ < chosen->seq_ : waiter->arrival_ < chosen->arrival_);
    if (before) chosen = waiter;
  }
  if (chosen != nullptr) {
    chosen->hand_over_ = Interest::HandOver::kClaimed;
    ++state.handed_in_a_row;  // undone by a hand-over that does not happen
  }
  return chosen;
}

void ReleaseListener::resolve(Interest& waiter, std::optional<Grant> grant) {
  std::lock_guard lock(mu_);
  waiter.hand_over_ = grant ? Interest::HandOver::kGranted : Interest::HandOver::kDeclined;
  if (grant) {
    waiter.grant_ = *grant;
  } else {
    --keys_.find(waiter.key_)->second.handed_in_a_row;  // the claimed waiter keeps the key alive
  }
  waiter.cv_.notify_one();
}

void ReleaseListener::holding(const std::string& key) {
  std::lock_guard lock(mu_);
  ++held_here_[key];
}

void ReleaseListener::not_holding(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = held_here_.find(key);
  if (it != held_here_.end() && --it->second <= 0) held_here_.erase(it);
}

void ReleaseListener::released(const std::string& key, bool freed, const std::string& head,
                               std::optional<Grant> grant) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  KeyState& state = it->second;
  const bool shared = std::exchange(state.shared, false);
  if (!freed || shared) {
    // No notification was sent (the release left holds), or none is known to have been; or the
    // key is freed for everyone: its notification wakes a waiter here as it does elsewhere.
    if (state.echoes > 0) --state.echoes;
    if (freed) state.handed_in_a_row = 0;
    return;
  }
  state.handed_in_a_row = 0;
  wake(state, head, grant);
}

void ReleaseListener::pass_on(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  if (Interest* next = longest_asleep(it->second, "")) rouse(*next);
}

std::size_t ReleaseListener::asleep(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.asleep.size();
}

ReleaseListener::Interest::Interest(ReleaseListener& listener, std::string key)
    : listener_(listener), key_(std::move(key)) {
  std::lock_guard lock(listener_.mu_);
  ++listener_.keys_[key_].interested;
  arrival_ = ++listener_.arrivals_;
}

ReleaseListener::Interest::~Interest() {
  std::lock_guard lock(listener_.mu_);
  auto it = listener_.keys_.find(key_);
  if (it == listener_.keys_.end()) return;
  KeyState& state = it->second;
  if (nudge_) state.asleep.erase(std::find(state.asleep.begin(), state.asleep.end(), this));
  if (!waiter_id_.empty()) {
    state.queued.erase(state.queued.find(waiter_id_));
    if (state.wake && state.wake_for == waiter_id_) {
      state.wake = false;  // no one else's
      state.grant.reset();
    }
  }
  if (--state.interested == 0) listener_.keys_.erase(it);
}

void ReleaseListener::Interest::queued_as(const std::string& waiter_id, std::int64_t seq) {
  std::lock_guard lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  if (!waiter_id_.empty()) state.queued.erase(state.queued.find(waiter_id_));
  waiter_id_ = waiter_id;
  seq_ = seq;
  state.queued.insert(waiter_id_);
}

void ReleaseListener::Interest::accept_hand_over(const LeaseInfo& lease,
                                                 const std::string& metadata) {
  lease_ = &lease;
  metadata_ = &metadata;
}

void ReleaseListener::Interest::park(std::function<void()> nudge) {
  {
    std::lock_guard lock(listener_.mu_);
    nudge_ = std::move(nudge);
    woken_ = true;  // armed by rearm(), which also takes a release no one was asleep for
    listener_.keys_[key_].asleep.push_back(this);
  }
  rearm();
}

void ReleaseListener::Interest::rearm() {
  std::lock_guard lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  if (state.wake && state.wake_for.empty()) {
    state.wake = false;  // a release no one was asleep for: this waiter takes it
    state.grant.reset();
    woken_ = true;  // nudged now: not again before its next rearm()
    nudge_();
    return;
  }
  woken_ = false;
}

void ReleaseListener::Interest::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(listener_.mu_);
  KeyState& state = listener_.keys_[key_];
  if (state.wake && (state.wake_for.empty() || state.wake_for == waiter_id_)) {
    state.wake = false;  // a release no one was asleep for: this waiter takes it
    if (state.grant) {
      hand_over_ = HandOver::kGranted;
      grant_ = *state.grant;
      state.grant.reset();
    }
    return;
  }
  if (hand_over_ == HandOver::kGranted) return;  // take_grant() first: the key is this waiter's
  woken_ = false;
  hand_over_ = lease_ != nullptr ? HandOver::kOffered : HandOver::kNone;
  deadline_ = std::chrono::steady_clock::now() + timeout;
  state.asleep.push_back(this);
  cv_.wait_for(lock, timeout, [&] {
    return listener_.stop_ || woken_ || hand_over_ == HandOver::kGranted ||
           hand_over_ == HandOver::kDeclined;
  });
  // A release is moving the key to this waiter: its outcome decides, whatever the time.
  cv_.wait(lock, [&] { return hand_over_ != HandOver::kClaimed; });
  state.asleep.erase(std::find(state.asleep.begin(), state.asleep.end(), this));
  if (hand_over_ != HandOver::kGranted) hand_over_ = HandOver::kNone;
}

bool ReleaseListener::Interest::held_here() const {
  std::lock_guard lock(listener_.mu_);
  return listener_.held_here_.contains(key_);
}

std::optional<ReleaseListener::Grant> ReleaseListener::Interest::take_grant() {
  std::lock_guard lock(listener_.mu_);
  if (hand_over_ != HandOver::kGranted) return std::nullopt;
  hand_over_ = HandOver::kNone;
  return grant_;
}

}  // namespace dblock::detail
