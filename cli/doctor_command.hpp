// SPDX-License-Identifier: Apache-2.0
// `dblock doctor`: which of dblock's guarantees hold on a database, one line per check with what
// to change, or JSON (--json); exit 1 when one does not hold.
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `doctor` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_doctor_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
