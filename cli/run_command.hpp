// SPDX-License-Identifier: Apache-2.0
// `dblock run --key K -- CMD ARGS...`: runs a command while holding a unique-key lock, renewing
// the lease while the command runs, so a cron job never runs on two hosts at once.
//
// Thread-safety: used from the main thread only. While the command runs, the main thread owns
// the child process; the library's renewer thread only wakes it through a pipe.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `run` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_run_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
