// SPDX-License-Identifier: Apache-2.0
// The bad-input table: each row names one wrong input (a key, a TTL, a table name, a URL, a
// credential, a misuse of a lease, a command line) and what dblock must answer: a dblock::Error
// with a code and a message fragment telling the user what to do, a documented outcome (such as
// "not acquired"), or, for the CLI, an exit code and one stderr line. bad_input_test.cpp runs
// every row on every database x driver pair and checks that no row changed the database: every
// table under the test's prefix, dblock's and the caller's, has the same rows before and after.
//
// Rows come in groups, one function per part of dblock; a new strategy adds its own function
// and lists it in all_bad_input_cases().
//
// Thread-safety: the rows are plain values; a context is used by one test at a time.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "process.hpp"

namespace dblock::testing {

// What a row works with: a pair with dblock's tables migrated under a fresh prefix.
struct BadInputContext {
  const Backend& backend;
  TableNames tables;                    // migrated
  Connection& conn;                     // an open connection to the pair's database
  ConnectionSource& pool;               // a pool over the pair's URL
  std::string url;                      // the pair's URL text, driver included, for the CLI
  std::string password;                 // must never appear in a message
  std::deque<Lease> leases{};           // held by setup, released after the check
  std::unique_ptr<Connection> spare{};  // a second connection a row may break

  // Options for a lease of named owner `owner` that does not renew itself (a renewal would
  // move expires_at and look like a change of state).
  static LockOptions as(const std::string& owner);
  // Runs the dblock CLI with DBLOCK_URL set to `url` (unless `env` sets it) and --prefix
  // appended when `with_prefix`.
  ProcessResult cli(std::vector<std::string> args, bool with_prefix = true,
                    std::map<std::string, std::string> env = {}) const;
};

struct BadInputCase {
  std::string name;   // CamelCase, unique: the test name
  std::string input;  // the wrong input, for the log
  // Brings the database to the state before the wrong input (may be empty). Changes here are
  // not checked; the snapshot is taken after it.
  std::function<void(BadInputContext&)> setup{};
  // Library rows: feeds the wrong input and returns the documented outcome, or throws.
  std::function<std::string(BadInputContext&)> act{};
  // CLI rows: runs the program with the wrong input.
  std::function<ProcessResult(BadInputContext&)> cli{};
  // The expected dblock::Error code (library rows that must throw), or none when act returns
  // the outcome in `expect`.
  std::optional<ErrorCode> code{};
  // The CLI's exit code (CLI rows).
  int exit_code = 64;
  // A fragment of the error message that tells the user what to do, or the expected outcome.
  std::string expect;
  // Text that must never appear in a message, besides the pair's password (e.g. a wrong
  // password the row tries).
  std::string secret{};
  // A key the row legitimately writes (valid input that merely looks dangerous); that key's row
  // is left out of the before/after comparison.
  std::string touched_key{};
};

std::vector<BadInputCase> lock_key_cases();
std::vector<BadInputCase> lock_option_cases();
std::vector<BadInputCase> lease_cases();
std::vector<BadInputCase> table_name_cases();
std::vector<BadInputCase> connection_cases();
std::vector<BadInputCase> migration_cases();
std::vector<BadInputCase> transactional_cases();
std::vector<BadInputCase> lock_set_cases();
std::vector<BadInputCase> session_cases();
std::vector<BadInputCase> semaphore_cases();
std::vector<BadInputCase> cli_cases();

// Every row, in a stable order.
const std::vector<BadInputCase>& all_bad_input_cases();

}  // namespace dblock::testing
