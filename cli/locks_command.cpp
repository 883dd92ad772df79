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
#include "dblock/lock_table.hpp"
#include "locks_metrics.hpp"

namespace dblock::cli {

namespace {

struct LocksOptions {
  DatabaseOptions db;
  bool json = false;
  std::optional<std::string> key_prefix;
  std::optional<std::string> prometheus;
};

nlohmann::json to_json(const LockRow& row, std::int64_t waiters) {
  nlohmann::json metadata = nullptr;
  if (!row.metadata.empty()) {
    metadata = nlohmann::json::parse(row.metadata, nullptr, /*allow_exceptions=*/false);
    if (metadata.is_discarded()) metadata = row.metadata;  // not JSON after all: keep the text
  }
  return {{"key", row.key},
          {"lease_id", row.lease_id},
          {"owner_host", row.owner_host},
          {"owner_process", row.owner_process},
          {"owner_thread", row.owner_thread},
          {"hold_count", row.hold_count},
          {"fencing_token", row.fencing_token},
          {"acquired_at", row.acquired_at},
          {"expires_at", row.expires_at},
          {"expired", row.expired},
          {"metadata", std::move(metadata)},
          {"waiters", waiters},
          {"kind", "lock"}};
}

std::int64_t waiting(const std::map<std::string, std::int64_t>& waiters, const std::string& key) {
  auto it = waiters.find(key);
  return it == waiters.end() ? 0 : it->second;
}

// "2024-05-01T12:00:00.123456Z" -> "2024-05-01 12:00:00"; anything else ("never") unchanged.
std::string to_seconds(std::string time) {
  if (time.size() < 19 || time[10] != 'T') return time;
  time[10] = ' ';
  return time.substr(0, 19);
}

// Prints `lines` (the first is the header) as columns two spaces apart.
template <std::size_t kColumns>
void print_columns(const std::vector<std::array<std::string, kColumns>>& lines) {
  std::array<std::size_t, kColumns> width{};
  for (const auto& line : lines) {
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : lines) {
    std::string out;
    for (std::size_t c = 0; c < kColumns; ++c) {
      out += line[c];
      if (c + 1 < kColumns) out += std::string(width[c] - line[c].size() + 2, ' ');
    }
    std::printf("%s\n", out.c_str());
  }
}

std::string owner_of(const LockRow& r) {
  return r.owner_host + "/" + r.owner_process + "/" + r.owner_thread;
}

// "finished": released before its min_hold ran out, so taken by no one until it expires.
std::string state_of(const LockRow& r) {
  if (r.expired) return "expired";
  if (r.expires_at == "never") return "claimed";
  return r.hold_count == 0 ? "finished" : "held";
}

void print_locks(const std::vector<LockRow>& rows,
                 const std::map<std::string, std::int64_t>& waiters) {
  std::vector<std::array<std::string, 8>> lines{
      {"KEY", "OWNER", "HOLDS", "TOKEN", "ACQUIRED (UTC)", "EXPIRES (UTC)", "STATE", "WAITERS"}};
  for (const auto& r : rows) {
    std::string state = state_of(r);
    lines.push_back({r.key, owner_of(r), std::to_string(r.hold_count),
                     std::to_string(r.fencing_token), to_seconds(r.acquired_at),
                     to_seconds(r.expires_at), std::move(state),
                     std::to_string(waiting(waiters, r.key))});
  }
  print_columns(lines);
}

// Semaphore permits: PERMIT is the slot (from 1) of the key's limit, "2/3".
void print_permits(const std::vector<PermitRow>& rows) {
  std::vector<std::array<std::string, 7>> lines{
      {"SEMAPHORE", "PERMIT", "OWNER", "TOKEN", "ACQUIRED (UTC)", "EXPIRES (UTC)", "STATE"}};
  for (const auto& p : rows) {
    const LockRow& r = p.lock;
    lines.push_back({r.key, std::to_string(p.slot + 1) + "/" + std::to_string(p.permits),
                     owner_of(r), std::to_string(r.fencing_token), to_seconds(r.acquired_at),
                     to_seconds(r.expires_at), state_of(r)});
  }
  print_columns(lines);
}

int list(const LocksOptions& opts) {
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
    for (const auto& row : rows) out.push_back(to_json(row, waiting(waiters, row.key)));
    for (const auto& p : permits) {
      nlohmann::json permit = to_json(p.lock, 0);
      permit["kind"] = "permit";
      permit["slot"] = p.slot;
      permit["permits"] = p.permits;
      out.push_back(std::move(permit));
    }
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
                "permit, which also has slot, from 0, and permits, the key's limit)");
  sub->add_option("--prometheus", opts->prometheus,
                  "Write gauges of the table instead of listing it (held and expired rows, the "
                  "oldest expired row's age, fair waiters per key) to FILE for node_exporter's "
                  "textfile collector")
      ->type_name("FILE");
  sub->footer(
      "Lists unique-key locks and claims (dblock's locks table), then the permits of counting "
      "semaphores (Semaphore) held now, by key and slot. Session locks (SessionLock) are "
      "not listed: the server holds them by a hash of the key (pg_locks shows a bigint, "
      "performance_schema.metadata_locks a \"dblock_<hex>\" name), with no key, owner or token "
      "to show.");
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return list(*opts); }); });
}

}  // namespace dblock::cli
