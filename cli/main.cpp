// SPDX-License-Identifier: Apache-2.0
// The `dblock` program: argument parsing and subcommand dispatch only.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>

#include "clean_command.hpp"
#include "common.hpp"
#include "doctor_command.hpp"
#include "history_command.hpp"
#include "lead_command.hpp"
#include "leader_command.hpp"
#include "locks_command.hpp"
#include "migrate_command.hpp"
#include "release_command.hpp"
#include "run_command.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dblock: locks kept in the SQL database a service already owns"};
  app.require_subcommand(1);
  app.set_version_flag("--version", dblock::cli::version_text(),
                       "Print the library version and the database drivers built in, and exit");
  app.footer(
      "Exit codes: 0 ok, 1 failure, 64 bad input, 69 database unreachable, 75 busy (try later), "
      "77 access denied, 78 schema missing or changed. `dblock run` and `dblock lead` otherwise "
      "exit with their command's status.");
  int exit_code = dblock::cli::kExitOk;
  dblock::cli::add_migrate_command(app, &exit_code);
  dblock::cli::add_run_command(app, &exit_code);
  dblock::cli::add_locks_command(app, &exit_code);
  dblock::cli::add_lead_command(app, &exit_code);
  dblock::cli::add_leader_command(app, &exit_code);
  dblock::cli::add_release_command(app, &exit_code);
  dblock::cli::add_clean_command(app, &exit_code);
  dblock::cli::add_doctor_command(app, &exit_code);
  dblock::cli::add_history_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // One line, like every other dblock error, naming the help that applies.
    std::string help = "dblock";
    for (const CLI::App* sub : app.get_subcommands()) help += " " + sub->get_name();
    std::string what = e.what();
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      what = "unknown subcommand '" + std::string(argv[1]) + "'; use";
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        what += " " + sub->get_name();
      }
    }
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::cerr << "dblock: " << what << " (see `" << help << " --help`)\n";
    return dblock::cli::kExitUsage;
  }
  return exit_code;
}
