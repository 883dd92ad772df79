// SPDX-License-Identifier: Apache-2.0
// `dblock history KEY [--since T] [--limit N] [--json]`: how each recorded tenure of a lock
// ended, newest first; `dblock history enable` / `disable`: create or drop the triggers that
// record them (docs/operations/history.md).
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `history` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_history_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
