// SPDX-License-Identifier: Apache-2.0
// Durations on the command line, as people write them: `500ms`, `1.5s`, `30s`, `2min`, `1m30s`,
// `1h`, `1d`, or a bare `0`.
//
// Thread-safety: the functions are pure and safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace dblock::cli {

// Parses one or more parts, each a number (digits, optionally a decimal point and more digits)
// followed at once by a unit: ms, s, m or min, h, d (`0` may stand alone). Parts add up
// (`1m30s` is 90 s). Throws dblock::Error(kInvalidArgument) naming the bad value and the accepted
// forms for anything else: a sign, spaces, an unknown or missing unit, a part finer than a
// millisecond (`1.5ms`), or a value too large to represent.
std::chrono::milliseconds parse_duration(std::string_view text);

// parse_duration for the value of a command-line option: the error names `option` first
// ("--ttl: ...").
std::chrono::milliseconds parse_duration_option(const std::string& text, const char* option);

// The shortest exact form parse_duration accepts back: 90000 ms -> "90s", 1500 ms -> "1500ms".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace dblock::cli
