// SPDX-License-Identifier: Apache-2.0
#include "recorded_holder.hpp"

#include <stdexcept>

#include "dblock/error.hpp"

namespace dblock::testing {

std::optional<Lease> try_acquire_recorded(Lock& lock, HistoryWriter& history,
                                          const std::string& client, const std::string& key,
                                          const LockOptions& options) {
  const std::int64_t sent = monotonic_us();
  auto lease = lock.try_acquire(key, options);
  if (lease) history.acquired(client, key, lease->fencing_token(), monotonic_us(), sent, 0);
  return lease;
}

RecordedHolder::RecordedHolder(Lock& lock, HistoryWriter& history, std::string client,
                               std::string key, std::chrono::milliseconds ttl)
    : lock_(lock), history_(history), client_(std::move(client)), key_(std::move(key)), ttl_(ttl) {}

RecordedHolder::~RecordedHolder() {
  stop_renewing();
  if (lease_) {
    try {
      release();
    } catch (...) {
      // The lease then ends by its TTL.
    }
  }
}

bool RecordedHolder::acquire(std::chrono::milliseconds wait, Waiting waiting) {
  LockOptions options;
  options.ttl = ttl_;
  options.owner = Owner::named(client_);
  options.auto_renew = false;  // renewals are ours, so the history knows when each was sent
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    const std::int64_t sent = monotonic_us();
    auto lease = waiting == Waiting::kInLock ? lock_.acquire(key_, wait, options)
                                             : lock_.try_acquire(key_, options);
    const std::int64_t reply = monotonic_us();
    if (lease) {
      token_ = lease->fencing_token();
      valid_until_us_ = sent + ttl_.count() * 1000;
      history_.acquired(client_, key_, lease->fencing_token(), reply, sent, ttl_.count());
      lease_ = std::move(lease);
      renewer_ = std::thread([this] { renew_loop(); });
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool RecordedHolder::lost() const noexcept { return lease_ && lease_->lost(); }

bool RecordedHolder::lost_within(std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!lost() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return lost();
}

void RecordedHolder::renew_loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, ttl_ / 3, [&] { return stop_; })) return;
    lock.unlock();
    const std::int64_t sent = monotonic_us();
    bool held = false;
    bool failed = false;
    try {
      std::lock_guard turn(connection_mu_);
      held = lease_->renew(ttl_);
    } catch (const Error&) {
      failed = true;  // the connection broke: try again next time; the TTL decides
    }
    if (held) {
      valid_until_us_ = sent + ttl_.count() * 1000;
      history_.renewed(client_, key_, token_, sent, ttl_.count());
    }
    lock.lock();
    if (!held && !failed) return;  // gone: renewing again cannot bring it back
  }
}

void RecordedHolder::stop_renewing() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

Connection& RecordedHolder::lease_connection() {
  if (!lease_ || lease_->connection() == nullptr) {
    throw std::logic_error("RecordedHolder::in_transaction(): no transactional lease is held");
  }
  return *lease_->connection();
}

bool RecordedHolder::renew_now() {
  stop_renewing();
  if (!lease_) return false;
  const std::int64_t sent = monotonic_us();
  bool held = lease_->renew(ttl_);
  if (held) {
    valid_until_us_ = sent + ttl_.count() * 1000;
    history_.renewed(client_, key_, token_, sent, ttl_.count());
  }
  return held;
}

std::string RecordedHolder::release(std::string* error) {
  stop_renewing();
  if (!lease_) return "not_held";
  Lease lease = std::move(*lease_);
  lease_.reset();
  const std::int64_t sent = monotonic_us();
  std::string outcome;
  try {
    outcome = std::string(to_string(lease.release()));
  } catch (const Error& e) {
    outcome = "error";
    if (error != nullptr) *error = e.what();
  }
  history_.released(client_, key_, token_, sent, outcome);
  return outcome;
}

}  // namespace dblock::testing
