// SPDX-License-Identifier: Apache-2.0
// `dblock locks --watch`: the lock table redrawn every interval (locks_view.hpp draws each
// frame) until SIGINT, SIGTERM, SIGHUP or SIGQUIT, then exit 0, as watch(1) does. On a terminal
// each frame is drawn over the last one; otherwise (a pipe, a file) frames follow one another,
// a blank line apart, each opening with its time; with --json each is one line of JSON. A
// refresh that fails shows its error and the next interval tries again on a new connection.
//
//   WatchSettings settings{db, std::nullopt, watch_interval("500ms"), /*json=*/false};
//   return watch_locks(settings);  // returns once a stop signal came
//
// Refreshes run on a thread of their own, so a stop signal ends the watch within a second even
// while a refresh waits on an unreachable database.
//
// Thread-safety: watch_locks is called from the main thread, once.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common.hpp"

namespace dblock::cli {

struct WatchSettings {
  DatabaseOptions db;
  std::optional<std::string> key_prefix;
  std::chrono::milliseconds interval{1000};
  bool json = false;
};

// The allowed range of --interval.
inline constexpr std::chrono::milliseconds kMinWatchInterval{100};
inline constexpr std::chrono::milliseconds kMaxWatchInterval{3'600'000};

// Parses --interval's value: a duration (duration.hpp) from kMinWatchInterval to
// kMaxWatchInterval. Throws dblock::Error(kInvalidArgument) saying what to give otherwise.
std::chrono::milliseconds watch_interval(const std::string& text);

// Watches until a stop signal: returns kExitOk then. Throws dblock::Error for a URL that does not
// parse (before anything is drawn), or when standard output cannot be written to.
int watch_locks(const WatchSettings& settings);

}  // namespace dblock::cli
