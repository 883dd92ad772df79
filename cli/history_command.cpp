// SPDX-License-Identifier: Apache-2.0
#include "history_command.hpp"

#include <array>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "dblock/history.hpp"
#include "duration.hpp"
#include "locks_view.hpp"

namespace dblock::cli {

namespace {

constexpr const char* kHistoryFooter =
    R"(Lists how each recorded tenure of lock KEY ended, newest first: its owner
(host/process/thread), fencing token, when it was acquired and when it ended (UTC, by the
database clock), and how: released (by its holder, or handed to a waiter), force_released (by
`dblock release`), expired (its lease ran out and its own owner took the key again), taken_over
(another owner took the key after it ran out) or cleaned (`dblock clean` deleted it after it ran
out). A tenure that ran out is recorded when the key is next taken or cleaned, at its expiry.

Holds are recorded only while history is on: `dblock history enable` creates the triggers (once
per database, as the role that applies migrations; needs migration 0009), `dblock history
disable` drops them. `dblock clean --history-retention` prunes old rows.

Exit status: 0 listed (also when nothing is recorded); 64 bad option, 69 database unreachable,
77 access denied, 78 history table missing (run `dblock migrate up`).)";

struct HistoryOptions {
  DatabaseOptions db;
  std::string key;
  std::optional<std::string> since;
  std::int64_t limit = 100;
  bool json = false;
};

// "2024-05-01T12:00:00.123456Z" -> "2024-05-01 12:00:00.123"; anything else unchanged.
std::string to_millis(const std::string& time) { return shortened_time(time, 23).value_or(time); }

nlohmann::json row_json(const HistoryRow& row) {
  return {{"key", row.key},
          {"fencing_token", row.fencing_token},
          {"owner_host", row.owner_host},
          {"owner_process", row.owner_process},
          {"owner_thread", row.owner_thread},
          {"acquired_at", row.acquired_at},
          {"ended_at", row.ended_at},
          {"ended_how", std::string(to_string(row.ended_how))}};
}

int list(const HistoryOptions& opts) {
  if (opts.key.empty()) {
    std::cerr << "dblock: history needs the KEY whose holds to list (`dblock history KEY`), or "
                 "enable / disable\n";
    return kExitUsage;
  }
  if (opts.limit < 0) {
    std::cerr << "dblock: --limit must be 0 (every hold) or more\n";
    return kExitUsage;
  }
  HistoryQuery query;
  if (opts.since) query.since = parse_duration_option(*opts.since, "--since");
  query.limit = static_cast<std::uint64_t>(opts.limit);
  auto conn = opts.db.connect();
  const std::vector<HistoryRow> rows = read_history(*conn, opts.db.table_names(), opts.key, query);
  if (opts.json) {
    for (const HistoryRow& row : rows) {
      std::printf(
          "%s\n",
          row_json(row).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return kExitOk;
  }
  if (rows.empty()) {
    std::printf("no holds of %s recorded%s\n", printable(opts.key).c_str(),
                opts.since ? (" in the last " + *opts.since).c_str() : "");
    return kExitOk;
  }
  std::vector<std::array<std::string, 5>> lines{
      {"ENDED (UTC)", "HOW", "OWNER", "TOKEN", "ACQUIRED (UTC)"}};
  for (const HistoryRow& row : rows) {
    // Names are shown escaped: a control character in one cannot drive the terminal.
    lines.push_back({to_millis(row.ended_at), std::string(to_string(row.ended_how)),
                     printable(row.owner_host + "/" + row.owner_process + "/" + row.owner_thread),
                     std::to_string(row.fencing_token), to_millis(row.acquired_at)});
  }
  std::fputs(format_columns(lines).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void add_history_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<HistoryOptions>();
  CLI::App* sub = app.add_subcommand(
      "history", "List how a lock's recorded holds ended; enable or disable recording them");
  sub->add_option("KEY", opts->key,
                  "The lock whose holds to list (after --, a key named enable "
                  "or disable)")
      ->type_name("KEY");
  sub->add_option("--since", opts->since,
                  "Only holds that ended within this long before now, by the database clock "
                  "(30s, 15min, 2h, 7d)")
      ->type_name("DURATION");
  sub->add_option("--limit", opts->limit, "At most this many holds, the newest (0: all)")
      ->type_name("N")
      ->capture_default_str();
  sub->add_flag("--json", opts->json, "One JSON object per line instead of a table");
  opts->db.add_to(*sub);
  sub->footer(kHistoryFooter);
  sub->require_subcommand(0, 1);
  sub->callback([sub, opts, exit_code] {
    if (!sub->get_subcommands().empty()) return;  // enable / disable ran
    *exit_code = run_guarded([&] { return list(*opts); });
  });

  // The database options are shared: given before the action or after it, they apply.
  auto add = [&](const char* name, const char* help, bool enable) {
    CLI::App* action = sub->add_subcommand(name, help);
    opts->db.add_to(*action);
    action->callback([opts, exit_code, enable] {
      *exit_code = run_guarded([&] {
        auto conn = opts->db.connect();
        const TableNames tables = opts->db.table_names();
        if (enable) {
          enable_history(*conn, tables);
          std::printf("history of holds enabled: ended holds of %s are recorded in %s\n",
                      tables.name("locks").c_str(), tables.name("history").c_str());
        } else {
          disable_history(*conn, tables);
          std::printf("history of holds disabled: no ended hold of %s is recorded\n",
                      tables.name("locks").c_str());
        }
        return kExitOk;
      });
    });
  };
  add("enable",
      "Record every hold that ends from now on (creates triggers; as the role that applies "
      "migrations)",
      true);
  add("disable", "Stop recording (drops the triggers; the rows recorded stay)", false);
}

}  // namespace dblock::cli
