// SPDX-License-Identifier: Apache-2.0
#include "bad_input_rows.hpp"

#include <chrono>
#include <stdexcept>

namespace dblock::testing {

std::string outcome(const std::optional<Lease>& lease) {
  return lease ? "acquired" : "not acquired";
}

std::string shown(const std::string& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < key.size() && i < 40; ++i) {
    auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out + (key.size() > 40 ? "'... (" + std::to_string(key.size()) + " bytes)" : "'");
}

BadInputCase bad_key_row(const LockUnderTest& lock, const std::string& name, std::string key,
                         std::string fragment) {
  return {.name = lock.prefix + name,
          .input = lock.type + "::try_acquire(" + shown(key) + ")",
          .act = [make = lock.make,
                  key](BadInputContext& ctx) { return outcome(make(ctx)->try_acquire(key)); },
          .code = ErrorCode::kInvalidArgument,
          .expect = std::move(fragment)};
}

std::vector<BadInputCase> bad_key_rows(const LockUnderTest& lock) {
  return {bad_key_row(lock, "EmptyKey", "", "the lock key is empty"),
          bad_key_row(lock, "KeyOver255Characters", std::string(256, 'k'), "the limit is 255"),
          bad_key_row(lock, "KeyInvalidUtf8", "\xff\xfe", "not valid UTF-8")};
}

BadInputCase negative_timeout_row(const LockUnderTest& lock) {
  return {.name = lock.prefix + "NegativeTimeout",
          .input = lock.type + "::acquire with timeout -1 ms",
          .act =
              [make = lock.make](BadInputContext& ctx) {
                return outcome(make(ctx)->acquire("k", std::chrono::milliseconds(-1),
                                                  BadInputContext::as("a")));
              },
          .code = ErrorCode::kInvalidArgument,
          .expect = "use 0 for a single try"};
}

BadInputCase double_release_row(const LockUnderTest& lock) {
  return {
      .name = lock.prefix + "DoubleRelease",
      .input = "release() of a " + lock.type + " lease twice",
      .setup =
          [make = lock.make](BadInputContext& ctx) {
            auto lease = make(ctx)->try_acquire("held", BadInputContext::as("a"));
            if (!lease) throw std::runtime_error("setup: could not take 'held'");
            ctx.leases.push_back(std::move(*lease));
            ctx.leases[0].release();
          },
      .act = [](BadInputContext& ctx) { return std::string(to_string(ctx.leases[0].release())); },
      .code = ErrorCode::kInvalidArgument,
      .expect = "this lease handle is empty (released or moved from); acquire the lock again"};
}

}  // namespace dblock::testing
