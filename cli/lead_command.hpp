// SPDX-License-Identifier: Apache-2.0
// `dblock lead --key K -- CMD ARGS...`: campaigns in the election K (dblock::Election) and runs
// CMD for each term this host leads; stops CMD's processes before the term can end elsewhere,
// and campaigns again, restarting CMD when elected again. One replica of a service leads.
//
// Thread-safety: used from the main thread, which owns CMD's processes and reads the signals;
// the election campaigns on a thread of its own and hands each term over.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `lead` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_lead_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
