// Durations on the command line: `500ms`, `30s`, `5m`, `1h`, or a bare `0`.
//
// Thread-safety: the functions are pure and safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace dblock::cli {

// Parses a whole number followed by one unit: ms, s, m or h (`0` may stand alone). Throws
// dblock::Error(kInvalidArgument) naming the bad value and the accepted forms for anything else:
// a sign, a fraction, spaces, an unknown or missing unit, or a value too large to represent.
std::chrono::milliseconds parse_duration(std::string_view text);

// The shortest exact form parse_duration accepts back: 90000 ms -> "90s", 1500 ms -> "1500ms".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace dblock::cli
