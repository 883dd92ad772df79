// SPDX-License-Identifier: Apache-2.0
// `dblock release`: an operator frees a stuck lock, owner-checked, refusing a live lease unless
// forced, and says on stdout what it released (one line, for the audit trail).
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `release` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_release_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
