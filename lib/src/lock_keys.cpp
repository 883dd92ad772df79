// SPDX-License-Identifier: Apache-2.0
#include "lock_keys.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "dblock/error.hpp"
#include "dblock/lock.hpp"
#include "random.hpp"

namespace dblock {

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

namespace detail {

bool is_write_contention(ErrorCode code) noexcept {
  return code == ErrorCode::kDeadlock || code == ErrorCode::kSerializationFailure ||
         code == ErrorCode::kLockWaitTimeout || code == ErrorCode::kLockNotAvailable;
}

void pause_after_contention(int attempt) {
  std::uniform_int_distribution<int> pick(0, 2 << std::min(attempt, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(pick(jitter_generator())));
}

// From the kernel on every call: a generator's state would be copied by fork(), and a child's
// ids would repeat its parent's and its siblings' (two holders of one permit, one lease id).
std::string random_lease_id() { return random_hex(32); }

void validate_ttl(std::chrono::milliseconds ttl, std::string_view what) {
  constexpr auto kMax = std::chrono::hours(24 * 365);
  if (ttl < std::chrono::milliseconds(1) || ttl > kMax) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) +
                                                 " must be from 1 ms to 365 days; got " +
                                                 std::to_string(ttl.count()) + " ms");
  }
}

void validate_min_hold(std::chrono::milliseconds min_hold) {
  if (min_hold < std::chrono::milliseconds(0) || min_hold > std::chrono::hours(24 * 365)) {
    throw Error(ErrorCode::kInvalidArgument, "min_hold must be from 0 to 365 days; got " +
                                                 std::to_string(min_hold.count()) + " ms");
  }
}

void refuse_min_hold(std::chrono::milliseconds min_hold, std::string_view strategy) {
  if (min_hold.count() == 0) return;
  throw Error(ErrorCode::kInvalidArgument,
              std::string(strategy) +
                  " keep no lease row that could stay taken after a release, so min_hold "
                  "cannot apply; use a UniqueKeyLock (or a Semaphore) for jobs that must hold a "
                  "key for a least time");
}

bool is_forever_wait(std::chrono::milliseconds timeout) {
  if (timeout < std::chrono::milliseconds(0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the wait timeout is negative; use 0 for a single try");
  }
  return timeout >= std::chrono::hours(24 * 365 * 100);
}

}  // namespace detail
}  // namespace dblock
