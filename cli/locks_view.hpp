// SPDX-License-Identifier: Apache-2.0
// What `dblock locks --watch` shows each refresh: the lock table read in one go (rows, permits,
// fair waiters' queues, the database clock) and drawn as one frame of text or one line of JSON.
// Also the pieces the one-shot listing shares: a row as JSON, its state, aligned columns.
//
//   LockTableView view = read_lock_table(conn, tables, "jobs/");
//   std::string frame = render_frame(view, "2026-11-27 12:00:00 UTC  every 1s  postgresql://...");
//
// Thread-safety: pure functions of their arguments, but for read_lock_table's connection.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/table_names.hpp"

namespace dblock::cli {

struct LockTableView {
  std::string now;  // the database clock when read (database_now)
  std::vector<LockRow> locks;
  std::vector<PermitRow> permits;
  std::vector<WaiterQueue> queues;
};

// Reads the clock first, then the rows: a row listed as live expires after `now`.
LockTableView read_lock_table(Connection& conn, const TableNames& tables,
                              const std::string& key_prefix);

// A row as `dblock locks --json` prints it; `waiters`: the fair waiters queued for its key.
nlohmann::json lock_json(const LockRow& row, std::int64_t waiters);
nlohmann::json permit_json(const PermitRow& permit);

// A time as the database gives it ("2026-11-27T12:00:00.123456Z", UTC) cut to its first
// `length` characters with a space for the 'T' (19: to the second, 23: to the millisecond);
// nothing for any other text ("never").
std::optional<std::string> shortened_time(const std::string& time, std::size_t length);

// "host/process/thread".
std::string owner_of(const LockRow& row);

// "held", "claimed", "finished" (released before its min_hold ran out) or "expired".
std::string state_of(const LockRow& row);

// `lines` (the first is the header) as columns two spaces apart, each line ending in '\n'.
template <std::size_t kColumns>
std::string format_columns(const std::vector<std::array<std::string, kColumns>>& lines) {
  std::array<std::size_t, kColumns> width{};
  for (const auto& line : lines) {
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], line[c].size());
  }
  std::string out;
  for (const auto& line : lines) {
    for (std::size_t c = 0; c < kColumns; ++c) {
      out += line[c];
      if (c + 1 < kColumns) out += std::string(width[c] - line[c].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

// A span of time as a person reads it: 850ms, 12.3s, 4m05s, 2h03m, 3d04h (negative: 0ms).
std::string format_span(double seconds);

// `text` with control characters (a newline in a key, an escape sequence) shown as \n, \t,
// \x1b, so that no name can break the layout or drive the terminal.
std::string printable(const std::string& text);

// One frame of the text view: `header`, a blank line, every lock and permit by key (kind, key,
// holder, token, how long held, time left before expiry by the database clock, state, fair
// waiters), then the fair waiters' queues (count, head, how long it waits). Ends with '\n'.
std::string render_frame(const LockTableView& view, const std::string& header);

// The frame shown when a refresh failed: `header`, a blank line, "error: <what>", and when the
// view last refreshed (`last_good`: the database clock then; empty: never).
std::string render_error_frame(const std::string& header, const std::string& what,
                               const std::string& last_good);

// One refresh as a JSON object: time (the database clock), url, interval_ms, key_prefix,
// locks (each as `--json` prints it), waiter_queues, error (null).
nlohmann::json frame_json(const LockTableView& view, const std::string& url,
                          std::int64_t interval_ms, const std::optional<std::string>& key_prefix);

// A failed refresh as JSON: time (the local clock), url, interval_ms, key_prefix, error.
nlohmann::json error_json(const std::string& local_time, const std::string& what,
                          const std::string& url, std::int64_t interval_ms,
                          const std::optional<std::string>& key_prefix);

// `frame` fitted to a terminal `columns` wide and `rows` high: lines cut at the width (by
// characters of UTF-8 text), and when the frame is taller, its last lines replaced by one that
// says how many were left out. No line ends in '\n'; lines are joined by "\x1b[K\n" (clear to
// the end of the line) so that a redraw over the previous frame leaves nothing of it.
std::string fit_to_terminal(const std::string& frame, std::size_t columns, std::size_t rows);

}  // namespace dblock::cli
