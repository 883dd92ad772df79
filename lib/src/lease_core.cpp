// SPDX-License-Identifier: Apache-2.0
// LeaseCore (lease_core.hpp): the release and renewal of a lease, serialised and run once, and a
// renewal stuck on a dead connection cut off by a release.
//
// Thread-safety: as lease_core.hpp says.
#include "lease_core.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <utility>

#include "dblock/error.hpp"
#include "log.hpp"

namespace dblock::detail {

LeaseCore::LeaseCore(LeaseInfo info, std::function<void(const std::string&)> on_lost, Clock& clock)
    : info_(std::move(info)),
      pid_(::getpid()),
      on_lost_(std::move(on_lost)),
      clock_(clock),
      ttl_ms_(info_.ttl.count()),
      renewed_at_(clock.now().time_since_epoch().count()) {}

void LeaseCore::observe(Observers observers, std::string_view strategy) noexcept {
  if (!observers) return;
  observers_ = std::move(observers);
  strategy_ = strategy;
  acquired_at_ = renewed_at();  // the acquisition's statement was sent then
  observed_.store(true, std::memory_order_release);
}

LeaseEvent LeaseCore::event() const noexcept {
  return {strategy_, info_.key, info_.fencing_token, info_.lease_id};
}

void LeaseCore::report_lost(LossReason reason) noexcept {
  if (!observed()) return;
  const LeaseLost lost{event(), reason, held_for()};
  observers_.each([&](Observer& o) { o.lost(lost); });
}

void LeaseCore::report_released(ReleaseOutcome outcome, bool dropped, std::string_view error,
                                bool lost_before) noexcept {
  if (!observed()) return;
  // Not lost(): a transactional lease's transaction has ended by now, committed or not.
  const bool lost = lost_before || lost_.load();
  const Released released{event(), held_for(), outcome, dropped, error, lost};
  observers_.each([&](Observer& o) { o.released(released); });
}

LeaseCore::RenewingOn::RenewingOn(LeaseCore& lease, int fd) noexcept : lease_(lease) {
  std::lock_guard lock(lease_.renewing_mu_);
  lease_.renewing_fd_ = fd;
}

LeaseCore::RenewingOn::~RenewingOn() {
  std::lock_guard lock(lease_.renewing_mu_);
  lease_.renewing_fd_ = -1;
}

void LeaseCore::end_renewing() noexcept {
  {
    std::lock_guard lock(renewing_mu_);
    renewing_ = false;
  }
  renewal_done_.notify_all();
}

void LeaseCore::stop_renewal() noexcept {
  // A renewal on a live connection ends within a round trip; one that has not after this long
  // is stuck on the network (or still waiting for a connection, and publishes its socket later:
  // hence the loop). The renewal cannot give its connection back while renewing_mu_ is held
  // (RenewingOn takes it to withdraw the socket), so the published socket is still the
  // renewal's: shutting it down fails the stuck statement (the driver then finds the connection
  // lost, and the pool drops it), and the renewal retries nothing once the lease is released.
  constexpr auto kPatience = std::chrono::milliseconds(200);
  std::unique_lock lock(renewing_mu_);
  while (!renewal_done_.wait_for(lock, kPatience, [&] { return !renewing_; })) {
    if (renewing_fd_ >= 0) ::shutdown(renewing_fd_, SHUT_RDWR);
  }
}

ReleaseOutcome LeaseCore::release() {
  if (foreign()) {  // a forked child's copy: the hold is the parent's (see lease_core.hpp)
    released_ = true;
    return ReleaseOutcome::kNotHeld;
  }
  std::lock_guard lock(release_mu_);
  if (released_) return ReleaseOutcome::kNotHeld;
  const bool lost_before = observed() && (lost() || out_of_time());  // as Lease::lost() says
  released_ = true;  // even if the statement fails: the lease then ends by its TTL
  stop_renewal();    // a renewal started before stops here; none starts after (released_)
  request_stop();    // the lease protects nothing from here on, however the release ends
  ReleaseOutcome outcome{};
  try {
    outcome = do_release();
  } catch (const std::exception& e) {
    if (observed()) {
      // A lease whose session or transaction ended (the server ended it, the connection broke):
      // its lock went with it.
      const auto* error = dynamic_cast<const Error*>(&e);
      const bool gone =
          connection_lost() || (error != nullptr && error->code() == ErrorCode::kLeaseLost);
      if (gone && !lost_.exchange(true)) report_lost(why_not_held());
      report_released(ReleaseOutcome::kNotHeld, false, e.what(), lost_before);
    }
    throw;
  }
  if (outcome == ReleaseOutcome::kNotHeld && !lost_.exchange(true)) {
    // Found gone by the release itself (on_lost is for losses found while the lease is held).
    if (observed()) report_lost(why_not_held());
  }
  report_released(outcome, false, {}, lost_before);
  return outcome;
}

void LeaseCore::release_quietly() noexcept {
  try {
    release();
  } catch (const std::exception& e) {
    log_failed_release(e);  // destructors never throw; the row expires by its TTL
  } catch (...) {
  }
}

void LeaseCore::log_failed_release(const std::exception& e) noexcept {
  if (observed()) {
    try {
      drop_error_ = e.what();
    } catch (...) {
    }
  }
  if (!logging()) return;
  try {
    log(LogLevel::kWarning, "releasing the lease of key '" + info_.key +
                                "' as it was dropped failed (" + e.what() +
                                "); the key is free once the lease expires");
  } catch (...) {
  }
}

void LeaseCore::abandon() noexcept {
  if (foreign()) {  // a forked child's copy: nothing is sent, no mutex of the parent's is taken
    released_ = true;
    return;
  }
  std::lock_guard lock(release_mu_);
  if (released_) return;
  const bool lost_before = observed() && (lost() || out_of_time());
  released_ = true;
  stop_renewal();
  request_stop();
  const bool was_lost = lost_.load();
  do_abandon();
  if (!observed()) return;
  const bool found_gone = !was_lost && lost_.load();
  if (found_gone) report_lost(why_not_held());
  report_released(found_gone || was_lost ? ReleaseOutcome::kNotHeld : ReleaseOutcome::kReleased,
                  true, drop_error_, lost_before);
}

void LeaseCore::do_abandon() noexcept {
  try {
    if (do_release() == ReleaseOutcome::kNotHeld) lost_ = true;
  } catch (const std::exception& e) {
    log_failed_release(e);  // destructors never throw; the row expires by its TTL
  } catch (...) {
  }
}

bool LeaseCore::renew(std::chrono::milliseconds ttl, bool background) {
  if (foreign()) return false;  // a forked child's copy: the hold is the parent's
  {
    std::unique_lock lock(renewing_mu_);
    renewal_done_.wait(lock, [&] { return !renewing_; });
    if (released_) return false;
    renewing_ = true;
  }
  bool held = false;
  const auto sent = clock_.now();
  try {
    held = do_renew(ttl);
    if (held) note_renewed(sent, ttl);
  } catch (const std::exception& e) {
    end_renewing();
    if (observed() && !released_) {
      const auto now = clock_.now();
      const RenewalFailed failed{
          event(), e.what(),
          std::chrono::floor<std::chrono::milliseconds>(renewed_at() + this->ttl() - now),
          background};
      observers_.each([&](Observer& o) { o.renewal_failed(failed); });
    }
    throw;
  } catch (...) {
    end_renewing();
    throw;
  }
  end_renewing();
  if (held) {
    if (observed()) {
      const Renewed renewed{event(), clock_.now() - sent, ttl, background};
      observers_.each([&](Observer& o) { o.renewed(renewed); });
    }
    return true;
  }
  // A release that ran meanwhile freed the row: the lease ended, it was not lost.
  if (!released_) mark_lost(observed() ? why_not_held() : LossReason::kGone);
  return false;
}

void LeaseCore::mark_lost(LossReason reason) noexcept {
  if (lost_.exchange(true)) return;
  request_stop();  // before on_lost: work watching the token stops first
  report_lost(reason);
  if (logging()) {
    try {
      log(LogLevel::kError, "the lease of key '" + info_.key + "' (fencing token " +
                                std::to_string(info_.fencing_token) +
                                ") is lost: another owner may hold the key now");
    } catch (...) {
    }
  }
  if (on_lost_) {
    try {
      on_lost_(info_.key);
    } catch (...) {
      // A callback's failure must not take the renewer down.
    }
  }
}

std::chrono::milliseconds LeaseCore::stop_margin() const noexcept {
  return std::min(info_.stop_margin.value_or(ttl() / 3), ttl());
}

bool LeaseCore::renewal_wanted() const noexcept {
  if (!info_.renew_if) return true;
  try {
    return info_.renew_if();
  } catch (...) {
    return false;  // a worker whose health check fails is not shown to be alive
  }
}

}  // namespace dblock::detail
