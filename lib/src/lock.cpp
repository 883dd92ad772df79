// SPDX-License-Identifier: Apache-2.0
#include "dblock/lock.hpp"

#include <sys/socket.h>

#include <cstdint>
#include <thread>

#include "dblock/error.hpp"
#include "lease_core.hpp"
#include "lock_keys.hpp"
#include "renewer.hpp"

namespace dblock {

std::string_view to_string(ReleaseOutcome outcome) noexcept {
  switch (outcome) {
    case ReleaseOutcome::kReleased:
      return "released";
    case ReleaseOutcome::kDecremented:
      return "decremented";
    case ReleaseOutcome::kNotHeld:
      return "not_held";
    case ReleaseOutcome::kConflict:
      return "conflict";
  }
  return "not_held";
}

namespace detail {

LeaseCore::LeaseCore(LeaseInfo info, std::function<void(const std::string&)> on_lost, Clock& clock)
    : info_(std::move(info)),
      pid_(::getpid()),
      on_lost_(std::move(on_lost)),
      clock_(clock),
      ttl_ms_(info_.ttl.count()),
      renewed_at_(clock.now().time_since_epoch().count()) {}

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
  released_ = true;  // even if the statement fails: the lease then ends by its TTL
  stop_renewal();    // a renewal started before stops here; none starts after (released_)
  ReleaseOutcome outcome = do_release();
  if (outcome == ReleaseOutcome::kNotHeld) lost_ = true;
  return outcome;
}

void LeaseCore::release_quietly() noexcept {
  try {
    release();
  } catch (...) {
    // Destructors never throw; the row expires by its TTL.
  }
}

void LeaseCore::abandon() noexcept {
  if (foreign()) {  // a forked child's copy: nothing is sent, no mutex of the parent's is taken
    released_ = true;
    return;
  }
  std::lock_guard lock(release_mu_);
  if (released_) return;
  released_ = true;
  stop_renewal();
  do_abandon();
}

void LeaseCore::do_abandon() noexcept {
  try {
    if (do_release() == ReleaseOutcome::kNotHeld) lost_ = true;
  } catch (...) {
    // Destructors never throw; the row expires by its TTL.
  }
}

bool is_conflict_error(const Error& e) noexcept {
  return e.code() == ErrorCode::kDeadlock || e.code() == ErrorCode::kSerializationFailure;
}

void throw_lease_lost(const std::string& key) {
  throw Error(ErrorCode::kLeaseLost,
              "the lease on '" + key +
                  "' was lost while the critical section ran (it expired or was taken over: "
                  "renew it, or use a longer TTL); its work was not protected the whole time, "
                  "so check or undo it before relying on it");
}

void pause_before_retry(Backoff& backoff) {
  std::this_thread::sleep_for(backoff.next(std::chrono::milliseconds::max()));
}

bool LeaseCore::renew(std::chrono::milliseconds ttl) {
  if (foreign()) return false;  // a forked child's copy: the hold is the parent's
  {
    std::unique_lock lock(renewing_mu_);
    renewal_done_.wait(lock, [&] { return !renewing_; });
    if (released_) return false;
    renewing_ = true;
  }
  bool held = false;
  try {
    const auto sent = clock_.now();
    held = do_renew(ttl);
    if (held) note_renewed(sent, ttl);
  } catch (...) {
    end_renewing();
    throw;
  }
  end_renewing();
  if (held) return true;
  // A release that ran meanwhile freed the row: the lease ended, it was not lost.
  if (!released_) mark_lost();
  return false;
}

void LeaseCore::mark_lost() noexcept {
  if (lost_.exchange(true)) return;
  if (on_lost_) {
    try {
      on_lost_(info_.key);
    } catch (...) {
      // A callback's failure must not take the renewer down.
    }
  }
}

}  // namespace detail

namespace {
const detail::LeaseCore& checked(const std::shared_ptr<detail::LeaseCore>& core) {
  if (!core) {
    throw Error(ErrorCode::kInvalidArgument,
                "this lease handle is empty (released or moved from); acquire the lock again");
  }
  return *core;
}
}  // namespace

Lease::Lease() noexcept = default;
Lease::Lease(std::shared_ptr<detail::LeaseCore> core) noexcept : core_(std::move(core)) {}
Lease::Lease(Lease&& other) noexcept = default;

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (core_) core_->abandon();
    core_ = std::move(other.core_);
  }
  return *this;
}

Lease::~Lease() {
  if (core_) core_->abandon();
}

bool Lease::valid() const noexcept { return core_ != nullptr; }
const std::string& Lease::key() const { return checked(core_).info().key; }
std::int64_t Lease::fencing_token() const { return checked(core_).info().fencing_token; }
const std::string& Lease::lease_id() const { return checked(core_).info().lease_id; }
const Owner& Lease::owner() const { return checked(core_).info().owner; }
bool Lease::lost() const noexcept {
  return core_ != nullptr && (core_->lost() || core_->out_of_time());
}

ReleaseOutcome Lease::release() {
  checked(core_);
  auto core = std::move(core_);  // empty now, whatever happens
  return core->release();
}

bool Lease::renew(std::chrono::milliseconds ttl) {
  checked(core_);
  // A zero or negative TTL would end the lease at once (or in the past) for every other owner.
  detail::validate_ttl(ttl, "the renewal TTL");
  bool held = core_->renew(ttl);
  detail::Renewer::instance().reschedule();  // the renewal interval follows the new TTL
  return held;
}

bool Lease::renew() { return renew(checked(core_).ttl()); }

Connection* Lease::connection() const { return core_ ? core_->connection() : nullptr; }

namespace {
constexpr std::size_t kMaxKeyChars = 255;  // the key columns are VARCHAR(255)

// Counts the code points of valid UTF-8; -1 when invalid (overlong forms, surrogates and values
// past U+10FFFF are invalid too).
long utf8_length(std::string_view s) {
  long count = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra = 0;
    std::uint32_t cp = c;
    if (c >= 0x80) {
      if ((c & 0xe0) == 0xc0) {
        extra = 1, cp = c & 0x1fu;
      } else if ((c & 0xf0) == 0xe0) {
        extra = 2, cp = c & 0x0fu;
      } else if ((c & 0xf8) == 0xf0) {
        extra = 3, cp = c & 0x07u;
      } else {
        return -1;
      }
    }
    if (s.size() - i <= extra) return -1;  // truncated sequence
    for (std::size_t k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return -1;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    i += extra + 1;
    ++count;
  }
  return count;
}
}  // namespace

void validate_lock_key(std::string_view key) {
  if (key.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "the lock key is empty; name what you are locking");
  }
  if (key.find('\0') != std::string_view::npos) {
    throw Error(ErrorCode::kInvalidArgument, "the lock key contains a NUL byte");
  }
  long n = utf8_length(key);
  if (n < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "the lock key is not valid UTF-8; encode binary keys (hex, base64) first");
  }
  if (static_cast<std::size_t>(n) > kMaxKeyChars) {
    throw Error(ErrorCode::kInvalidArgument,
                "the lock key has " + std::to_string(n) + " characters; the limit is " +
                    std::to_string(kMaxKeyChars) + " (hash longer keys)");
  }
}

}  // namespace dblock
