// SPDX-License-Identifier: Apache-2.0
#include "leader_command.hpp"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common.hpp"
#include "dblock/election.hpp"

namespace dblock::cli {

namespace {

struct LeaderOptions {
  DatabaseOptions db;
  std::string key;
  bool json = false;
};

int show(const LeaderOptions& opts) {
  auto conn = opts.db.connect();
  const std::optional<Leader> leader = leader_of(*conn, opts.key, opts.db.table_names());
  if (opts.json) {
    nlohmann::json out = nullptr;
    if (leader) {
      out = {{"key", opts.key},
             {"owner_host", leader->owner.host},
             {"owner_process", leader->owner.process},
             {"owner_thread", leader->owner.thread},
             {"value", leader->value},
             {"term", leader->term},
             {"elected_at", leader->elected_at},
             {"expires_at", leader->expires_at}};
    }
    std::printf("%s\n", out.dump().c_str());
  } else if (leader) {
    std::printf("%s: led by %s, term %lld, since %s, lease until %s%s%s\n", opts.key.c_str(),
                leader->owner.to_string().c_str(), static_cast<long long>(leader->term),
                leader->elected_at.c_str(), leader->expires_at.c_str(),
                leader->value.empty() ? "" : ", value ", leader->value.c_str());
  } else {
    std::printf("%s: no leader\n", opts.key.c_str());
  }
  return kExitOk;
}

}  // namespace

void add_leader_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LeaderOptions>();
  CLI::App* sub = app.add_subcommand("leader", "Show who leads an election (dblock::Election) now");
  opts->db.add_to(*sub);
  sub->add_option("--key", opts->key, "The election's name (its key in the locks table)")
      ->type_name("NAME")
      ->required();
  sub->add_flag("--json", opts->json,
                "Print one JSON object: key, owner_host, owner_process, owner_thread, value (what "
                "the leader publishes), term (its fencing token), elected_at, expires_at (UTC, "
                "ISO 8601); null when no one leads");
  sub->footer(
      "Reads the election's row once; exits 0 whether or not someone leads (\"no leader\", or "
      "null with --json). An expired lease does not lead: its candidate is gone or cut off.");
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return show(*opts); }); });
}

}  // namespace dblock::cli
