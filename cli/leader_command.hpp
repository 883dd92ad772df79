// SPDX-License-Identifier: Apache-2.0
// `dblock leader`: who leads an election (dblock::Election) now, as a line or as JSON (--json).
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `leader` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_leader_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
