// SPDX-License-Identifier: Apache-2.0
// What every `dblock` subcommand shares: the database options (--url, --prefix, --schema),
// opening the connection, and turning a dblock::Error into one stderr line and an exit code.
//
// Thread-safety: used from the main thread only.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"
#include "dblock/url.hpp"

namespace dblock::cli {

// Exit codes (sysexits.h): what a cron wrapper or script can act on.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // anything else
inline constexpr int kExitUsage = 64;        // bad command line or input (EX_USAGE)
inline constexpr int kExitUnavailable = 69;  // cannot reach the database (EX_UNAVAILABLE)
inline constexpr int kExitTempFail = 75;     // busy; try again later (EX_TEMPFAIL)
inline constexpr int kExitNoPerm = 77;       // credentials or privileges (EX_NOPERM)
inline constexpr int kExitConfig = 78;       // schema missing or drifted (EX_CONFIG)

struct DatabaseOptions {
  std::optional<std::string> url;       // else DBLOCK_URL
  std::optional<std::string> url_file;  // a file holding the URL (keeps passwords out of ps)
  std::string prefix{TableNames::kDefaultPrefix};
  std::string schema;

  // Adds --url, --url-file, --prefix and --schema to a (sub)command.
  void add_to(CLI::App& app);
  TableNames table_names() const;
  // The URL these options name: --url, else the file --url-file names, else DBLOCK_URL; the
  // password filled from the environment when the URL has none.
  DatabaseUrl resolve_url() const;
  // Opens one connection to resolve_url().
  std::unique_ptr<Connection> connect() const;
};

// Runs `body`, turning a dblock::Error or other exception into "dblock: <message>" on stderr
// and the matching exit code.
int run_guarded(const std::function<int()>& body);

// For an option read into an unsigned number: refuses text that is not a whole number 0 or more
// ("--batch: must be a whole number, 0 or more; got '-1'"), which CLI11 would otherwise read
// as the type's largest value.
CLI::Validator whole_number();

}  // namespace dblock::cli
