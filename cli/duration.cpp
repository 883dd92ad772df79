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

// Longest suffix first, so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {{"ms", 1}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}};

[[noreturn]] void reject(std::string_view text, std::string_view why) {
  throw Error(ErrorCode::kInvalidArgument,
              "invalid duration '" + std::string(text) + "' (" + std::string(why) +
                  "): use a whole number with ms, s, m or h, e.g. 500ms, 30s, 5m, 1h, or 0");
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  if (text.empty()) reject(text, "empty");
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    reject(text, text[0] == '-' ? "negative" : "it must start with a digit");
  }
  std::string_view suffix = text.substr(digits);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t value = 0;
  for (char c : text.substr(0, digits)) {
    if (value > (kMax - (c - '0')) / 10) reject(text, "too large");
    value = value * 10 + (c - '0');
  }
  if (suffix.empty()) {
    if (value == 0) return std::chrono::milliseconds(0);
    reject(text, "no unit");
  }
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (value > kMax / unit.ms) reject(text, "too large");
    return std::chrono::milliseconds(value * unit.ms);
  }
  reject(text, "unknown unit '" + std::string(suffix) + "'");
}

std::string format_duration(std::chrono::milliseconds duration) {
  std::int64_t ms = duration.count();
  if (ms == 0) return "0";
  for (const Unit& unit : {kUnits[1], kUnits[2], kUnits[3]}) {
    if (ms % unit.ms == 0) return std::to_string(ms / unit.ms) + std::string(unit.suffix);
  }
  return std::to_string(ms) + "ms";
}

}  // namespace dblock::cli
