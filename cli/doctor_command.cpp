// SPDX-License-Identifier: Apache-2.0
#include "doctor_command.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common.hpp"
#include "dblock/doctor.hpp"

namespace dblock::cli {

namespace {

struct DoctorOptions {
  DatabaseOptions db;
  std::string role = "app";
  bool json = false;
};

DoctorRole role_of(const std::string& name) {
  if (name == "cleaner") return DoctorRole::kCleaner;
  if (name == "migrator") return DoctorRole::kMigrator;
  return DoctorRole::kApplication;
}

int doctor(const DoctorOptions& opts) {
  auto conn = opts.db.connect();
  const std::vector<Finding> findings =
      check_deployment(*conn, opts.db.table_names(), role_of(opts.role));
  const bool failed = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.status == Finding::Status::kFailure;
  });
  if (opts.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : findings) {
      out.push_back({{"check", f.check},
                     {"status", to_string(f.status)},
                     {"message", f.message},
                     {"advice", f.advice}});
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (const auto& f : findings) {
      std::string line = std::string(to_string(f.status)) + " " + f.check + ": " + f.message;
      if (!f.advice.empty()) line += "; to fix: " + f.advice;
      std::printf("%s\n", line.c_str());
    }
  }
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

void add_doctor_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* sub = app.add_subcommand(
      "doctor",
      "Check which of dblock's guarantees hold on this database: server and version, a writable "
      "primary, replication (synchronous standbys, Galera), isolation, time zone, clock, "
      "migrations, the history of holds, privileges. One line per check (ok, warning or failure, "
      "and what to change); "
      "exit 1 when a guarantee does not hold. A privilege the user lacks is a failure naming the "
      "GRANT that gives it");
  opts->db.add_to(*sub);
  sub->add_option("--role", opts->role,
                  "What this user is for, whose privileges to check: app (takes locks; also says "
                  "whether it may run the cleaner), cleaner (dblock clean) or migrator (dblock "
                  "migrate up)")
      ->check(CLI::IsMember({"app", "cleaner", "migrator"}))
      ->capture_default_str();
  sub->add_flag("--json", opts->json,
                "Print a JSON array of objects: check, status (ok, warning, failure), message, "
                "advice");
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return doctor(*opts); }); });
}

}  // namespace dblock::cli
