// SPDX-License-Identifier: Apache-2.0
/// @file
/// A schema migration: one numbered, forward-only script of dblock's tables (NNNN_name.sql), as
/// compiled into the library or read from a directory. The Migrator (migrator.hpp) applies them.
///
/// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "dblock/dialect.hpp"
#include "dblock/export.hpp"

namespace dblock {

struct DBLOCK_EXPORT Migration {
  int version = 0;   ///< from the file name's number: 0001_create_locks.sql -> 1
  std::string name;  ///< create_locks
  std::string sql;   ///< the script; {{table:x}} and {{name:x}} stand for prefixed, quoted names

  /// "0001_create_locks"
  std::string id() const;
  /// SHA-256 of `sql`, hex. Independent of the table prefix and schema.
  std::string checksum() const;
};

/// The migrations compiled into the library for a dialect, in version order.
DBLOCK_EXPORT std::vector<Migration> builtin_migrations(Dialect dialect);

/// Reads NNNN_name.sql files from a directory, in version order. Throws Error(kInvalidArgument)
/// for a missing directory, a badly named file or a duplicated version.
DBLOCK_EXPORT std::vector<Migration> load_migrations(const std::string& directory);

}  // namespace dblock
