// SPDX-License-Identifier: Apache-2.0
#include "locks_command.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "locks_metrics.hpp"
#include "locks_view.hpp"
#include "locks_watch.hpp"

namespace dblock::cli {

namespace {

struct LocksOptions {
  DatabaseOptions db;
  bool json = false;
  std::optional<std::string> key_prefix;
  std::optional<std::string> prometheus;
  bool watch = false;
  std::string interval = "1s";
};

std::int64_t waiting(const std::map<std::string, std::int64_t>& waiters, const std::string& key) {
  auto it = waiters.find(key);
  return it == waiters.end() ? 0 : it->second;
}

// "2024-05-01T12:00:00.123456Z" -> "2024-05-01 12:00:00"; anything else ("never") unchanged.
std::string to_seconds(const std::string& time) { return shortened_time(time, 19).value_or(time); }

void print_locks(const std::vector<LockRow>& rows,
                 const std::map<std::string, std::int64_t>& waiters) {
  std::vector<std::array<std::string, 8>> lines{
      {"KEY", "OWNER", "HOLDS", "TOKEN", "ACQUIRED (UTC)", "EXPIRES (UTC)", "STATE", "WAITERS"}};
  for (const auto& r : rows) {
    std::string state = state_of(r);
    // Keys and names are shown escaped: a control character in one cannot drive the terminal.
    lines.push_back({printable(r.key), printable(owner_of(r)), std::to_string(r.hold_count),
                     std::to_string(r.fencing_token), to_seconds(r.acquired_at),
                     to_seconds(r.expires_at), std::move(state),
                     std::to_string(waiting(waiters, r.key))});
  }
  std::fputs(format_columns(lines).c_str(), stdout);
}

// Semaphore permits: PERMIT is the slot (from 1) of the key's limit, "2/3".
void print_permits(const std::vector<PermitRow>& rows) {
  std::vector<std::array<std::string, 7>> lines{
      {"SEMAPHORE", "PERMIT", "OWNER", "TOKEN", "ACQUIRED (UTC)", "EXPIRES (UTC)", "STATE"}};
  for (const auto& p : rows) {
    const LockRow& r = p.lock;
    lines.push_back({printable(r.key), std::to_string(p.slot + 1) + "/" + std::to_string(p.permits),
                     printable(owner_of(r)), std::to_string(r.fencing_token),
                     to_seconds(r.acquired_at), to_seconds(r.expires_at), state_of(r)});
  }
  std::fputs(format_columns(lines).c_str(), stdout);
}

int watch(const LocksOptions& opts) {
  if (opts.prometheus) {
    throw Error(ErrorCode::kInvalidArgument,
                "--watch and --prometheus do not go together: --prometheus writes the gauges "
                "once, for a collector; run `dblock locks --prometheus FILE` from cron or a "
                "systemd timer, and --watch on its own");
  }
  WatchSettings settings;
  settings.db = opts.db;
  settings.key_prefix = opts.key_prefix;
  settings.interval = watch_interval(opts.interval);
  settings.json = opts.json;
  return watch_locks(settings);
}

int list(const LocksOptions& opts) {
  if (opts.watch) return watch(opts);
  auto conn = opts.db.connect();
  const TableNames tables = opts.db.table_names();
  std::vector<LockRow> rows =
      opts.key_prefix ? list_locks(*conn, tables, *opts.key_prefix) : list_locks(*conn, tables);
  const auto waiters = queued_waiters(*conn, tables);
  const std::vector<PermitRow> permits = list_permits(*conn, tables, opts.key_prefix.value_or(""));
  if (opts.prometheus) {
    write_metrics_file(*opts.prometheus,
                       lock_table_metrics(rows, permits, waiters, unix_seconds()));
    return kExitOk;
  }
  if (opts.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : rows) out.push_back(lock_json(row, waiting(waiters, row.key)));
    for (const auto& p : permits) out.push_back(permit_json(p));
    // Replace invalid UTF-8 (from a foreign writer) rather than fail the listing.
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (rows.empty() && permits.empty()) {
    std::printf(opts.key_prefix ? "no locks held with that key prefix\n" : "no locks held\n");
  } else {
    if (!rows.empty()) print_locks(rows, waiters);
    if (!rows.empty() && !permits.empty()) std::printf("\n");
    if (!permits.empty()) print_permits(permits);
  }
  return kExitOk;
}

}  // namespace

void add_locks_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LocksOptions>();
  CLI::App* sub = app.add_subcommand(
      "locks", "List the locks held now (and expired ones not yet cleaned up), by key");
  opts->db.add_to(*sub);
  sub->add_option("--key-prefix", opts->key_prefix,
                  "Only the keys that start with PREFIX (compared byte for byte; % and _ are "
                  "plain characters)")
      ->type_name("PREFIX");
  sub->add_flag("--json", opts->json,
                "Print a JSON array of objects: key, lease_id, owner_host, owner_process, "
                "owner_thread, hold_count, fencing_token, acquired_at, expires_at (UTC, ISO "
                "8601, or \"never\" for claims), expired, metadata (JSON or null), waiters (fair "
                "waiters queued for the key), kind (\"lock\", or \"permit\" for a semaphore's "
                "permit, which also has slot, from 0, and permits, the key's limit); with "
                "--watch, one object per refresh and line: time, clock, url, interval_ms, "
                "key_prefix, locks (those objects), waiter_queues, error");
  sub->add_option("--prometheus", opts->prometheus,
                  "Write gauges of the table instead of listing it (held and expired rows, the "
                  "oldest expired row's age, fair waiters per key) to FILE for node_exporter's "
                  "textfile collector")
      ->type_name("FILE");
  CLI::Option* watch_flag = sub->add_flag(
      "--watch", opts->watch,
      "Redraw the view every --interval until SIGINT, SIGTERM or SIGHUP (then exit 0): every "
      "lock and permit by key with its holder, token, how long held, time left before expiry by "
      "the database clock and state, and the fair waiters' queues with their heads. Drawn in "
      "place on a terminal; elsewhere one frame after another, a blank line apart; with --json "
      "one JSON object per line per refresh. A refresh that fails shows its error, and the next "
      "tries again");
  sub->add_option("--interval", opts->interval,
                  "Time between refreshes with --watch, 100ms to 1h (500ms, 2s, 1m)")
      ->capture_default_str()
      ->type_name("DURATION")
      ->needs(watch_flag);
  sub->footer(
      "Lists unique-key locks and claims (dblock's locks table), then the permits of counting "
      "semaphores (Semaphore) held now, by key and slot. Session locks (SessionLock) are "
      "not listed: the server holds them by a hash of the key (pg_locks shows a bigint, "
      "performance_schema.metadata_locks a \"dblock_<hex>\" name), with no key, owner or token "
      "to show.");
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return list(*opts); }); });
}

}  // namespace dblock::cli
