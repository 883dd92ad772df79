// SPDX-License-Identifier: Apache-2.0
#include "dblock/lock.hpp"

#include <cstdint>
#include <thread>

#include "dblock/error.hpp"
#include "lease_core.hpp"
#include "renewer.hpp"
#include "strategy_rules.hpp"

namespace dblock {

namespace detail {

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
  if (core_ == nullptr) return false;
  const bool lost = core_->lost() || core_->out_of_time();
  // A loss no thread of dblock's watches (a transaction that ended) stops the work from here.
  if (lost && core_->armed() && !core_->foreign()) core_->request_stop();
  return lost;
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

std::stop_token Lease::stop_token() const {
  checked(core_);
  if (core_->foreign()) {  // a forked child's copy: the hold is the parent's, nothing to watch
    std::stop_source stopped;
    stopped.request_stop();
    return stopped.get_token();
  }
  if (core_->lost() || core_->past_stop_at()) core_->request_stop();
  if (core_->arm()) detail::Renewer::instance().arm(core_);
  return core_->stop_token();
}

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
