// SPDX-License-Identifier: Apache-2.0
/// @file
/// Where dblock's tables live: an optional schema (PostgreSQL schema / MySQL database) and a name
/// prefix (default "dblock_"), so table "locks" is "dblock_locks".
///
/// Names are validated against a strict pattern (ASCII letters, digits and '_', not starting with
/// a digit, at most 63 characters in all) and always quoted in SQL; anything else is rejected
/// with Error(kInvalidArgument) before any statement is sent.
///
/// Thread-safety: TableNames is an immutable value.
#pragma once

#include <string>
#include <string_view>

#include "dblock/dialect.hpp"
#include "dblock/export.hpp"

namespace dblock {

/// Throws Error(kInvalidArgument) naming `what` unless `name` matches [A-Za-z_][A-Za-z0-9_]{0,62}.
DBLOCK_EXPORT void validate_identifier(std::string_view name, std::string_view what);

/// `name` quoted for the dialect: "name" on PostgreSQL, `name` on MySQL. Validates first.
DBLOCK_EXPORT std::string quote_identifier(Dialect dialect, std::string_view name);

/// "table" or "schema.table" quoted part by part for the dialect ("app"."orders"). Validates each
/// part; throws Error(kInvalidArgument) for anything else.
DBLOCK_EXPORT std::string quote_table_name(Dialect dialect, std::string_view table);

class DBLOCK_EXPORT TableNames {
 public:
  static constexpr std::string_view kDefaultPrefix = "dblock_";

  /// Throws Error(kInvalidArgument) for an invalid prefix or schema. An empty schema means the
  /// connection's current schema (PostgreSQL search_path / MySQL current database).
  TableNames() : TableNames(std::string(kDefaultPrefix)) {}
  explicit TableNames(std::string prefix, std::string schema = {});

  const std::string& prefix() const noexcept { return prefix_; }
  const std::string& schema() const noexcept { return schema_; }

  /// prefix + base, unquoted: "dblock_locks". Validates the result.
  std::string name(std::string_view base) const;
  /// The quoted, schema-qualified table name: "app"."dblock_locks" or `dblock_locks`.
  std::string qualified(Dialect dialect, std::string_view base) const;

 private:
  std::string prefix_;
  std::string schema_;
};

}  // namespace dblock
