// SPDX-License-Identifier: Apache-2.0
#include "duration.hpp"

#include <cstdint>
#include <limits>

#include "dblock/error.hpp"

namespace dblock::cli {

namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t ms;
};

// Longest suffix first where one starts another ("ms" and "min" before "m").
constexpr Unit kUnits[] = {{"ms", 1},     {"min", 60'000},  {"s", 1'000},
                           {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

[[noreturn]] void reject(std::string_view text, std::string_view why) {
  throw Error(ErrorCode::kInvalidArgument,
              "invalid duration '" + std::string(text) + "' (" + std::string(why) +
                  "): use a number with a unit (ms, s, m or min, h, d), e.g. 500ms, 30s, 5m, "
                  "1h, 1.5s, 2min, 1m30s, 1d, or 0");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads digits at `at` into `value` (throwing when too large); returns how many there were.
std::size_t read_digits(std::string_view text, std::size_t at, std::int64_t& value,
                        std::string_view whole) {
  std::size_t n = 0;
  for (; at + n < text.size() && is_digit(text[at + n]); ++n) {
    const int d = text[at + n] - '0';
    if (value > (kMax - d) / 10) reject(whole, "too large");
    value = value * 10 + d;
  }
  return n;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  if (text.empty()) reject(text, "empty");
  if (text == "0") return std::chrono::milliseconds(0);
  if (!is_digit(text[0])) {
    reject(text, text[0] == '-' ? "negative" : "it must start with a digit");
  }
  std::int64_t total = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::int64_t whole = 0;
    const std::size_t digits = read_digits(text, at, whole, text);
    if (digits == 0) reject(text, "each part must start with a digit");
    at += digits;
    // The fraction: at most 9 digits, kept as fraction / scale.
    std::int64_t fraction = 0, scale = 1;
    if (at < text.size() && text[at] == '.') {
      ++at;
      std::size_t n = 0;
      for (; at + n < text.size() && is_digit(text[at + n]); ++n) {
        if (n >= 9) reject(text, "too many decimals");
        fraction = fraction * 10 + (text[at + n] - '0');
        scale *= 10;
      }
      if (n == 0) reject(text, "a decimal point needs digits after it");
      at += n;
    }
    std::size_t letters = 0;
    while (at + letters < text.size() && !is_digit(text[at + letters]) &&
           text[at + letters] != '.') {
      ++letters;
    }
    const std::string_view suffix = text.substr(at, letters);
    if (suffix.empty()) reject(text, "no unit");
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (suffix == u.suffix) unit = &u;
    }
    if (unit == nullptr) reject(text, "unknown unit '" + std::string(suffix) + "'");
    at += letters;
    if (whole > kMax / unit->ms) reject(text, "too large");
    std::int64_t part = whole * unit->ms;
    // fraction < scale <= 1e9 and unit->ms <= 8.64e7: the product fits in 64 bits.
    const std::int64_t fraction_ms_scaled = fraction * unit->ms;
    if (fraction_ms_scaled % scale != 0) reject(text, "finer than a millisecond");
    const std::int64_t fraction_ms = fraction_ms_scaled / scale;
    if (part > kMax - fraction_ms || total > kMax - (part + fraction_ms)) reject(text, "too large");
    total += part + fraction_ms;
  }
  return std::chrono::milliseconds(total);
}

std::string format_duration(std::chrono::milliseconds duration) {
  std::int64_t ms = duration.count();
  if (ms == 0) return "0";
  for (const Unit& unit : {Unit{"h", 3'600'000}, Unit{"m", 60'000}, Unit{"s", 1'000}}) {
    if (ms % unit.ms == 0) return std::to_string(ms / unit.ms) + std::string(unit.suffix);
  }
  return std::to_string(ms) + "ms";
}

std::chrono::milliseconds parse_duration_option(const std::string& text, const char* option) {
  try {
    return parse_duration(text);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
}

}  // namespace dblock::cli
