// SPDX-License-Identifier: Apache-2.0
// `dblock locks`: who holds which lock, as an aligned table or as JSON (--json) for scripts.
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `locks` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_locks_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
