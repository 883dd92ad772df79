// SPDX-License-Identifier: Apache-2.0
// `dblock clean`: deletes expired lock rows in bounded batches, from cron (quiet on success,
// non-zero exit on failure) or as a service (--loop), with an optional summary line, JSON and
// Prometheus metrics.
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace dblock::cli {

// Adds the `clean` subcommand to `app`. After parsing, `*exit_code` holds its result.
void add_clean_command(CLI::App& app, int* exit_code);

}  // namespace dblock::cli
