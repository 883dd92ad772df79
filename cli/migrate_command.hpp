// SPDX-License-Identifier: Apache-2.0
// `dblock migrate up|status|verify`: the schema migrator on the command line.
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `migrate` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_migrate_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
