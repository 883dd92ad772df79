// SPDX-License-Identifier: Apache-2.0
// The migration files compiled into the library, and parsing of migration file names. Internal.
//
// Thread-safety: read-only data and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dblock/migration.hpp"

namespace dblock::detail {

struct EmbeddedFile {
  const char* path;  // "<dialect>/NNNN_name.sql"
  const char* text;
};

// Generated at build time by cmake/embed_migrations.cmake.
const std::vector<EmbeddedFile>& embedded_migration_files();

// Builds a Migration from a file name ("0001_create_locks.sql") and its text. Throws
// Error(kInvalidArgument) when the name is not NNNN_name.sql.
Migration parse_migration_file(std::string_view file_name, std::string text);

// Sorts by version; throws Error(kInvalidArgument) on a duplicated version.
void sort_and_check(std::vector<Migration>& migrations);

}  // namespace dblock::detail
