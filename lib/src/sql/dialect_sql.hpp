// Every SQL statement dblock sends, per dialect: lib/src/sql/postgresql.cpp and
// lib/src/sql/mysql.cpp each hold the whole set for one database, to be reviewed as a whole.
//
// Statements are templates: {{table:x}} becomes the schema-qualified, quoted name of table
// prefix+x, {{name:x}} the quoted name prefix+x, {{schema}} the quoted schema name (see
// render_sql). Values are always bound parameters ($n on PostgreSQL, ? on MySQL), never spliced.
//
// Thread-safety: read-only data and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::detail {

struct DialectSql {
  // Migrator.
  std::string_view create_schema;            // {{schema}}
  std::string_view migrator_lock;            // params: lock key; returns one row, column "got"
  std::string_view migrator_unlock;          // params: lock key; empty when the lock ends at COMMIT
  bool migrations_in_one_transaction;        // DDL is transactional
  std::string_view migrations_table_exists;  // params: dialect-specific (see the .cpp)
  std::string_view create_migrations_table;
  std::string_view select_migrations;  // columns: version, name, checksum, applied_at
  std::string_view insert_migration;   // params: version, name, checksum

  // Unique-key lock (see the .cpp for each statement's parameters).
  // PostgreSQL returns rows (RETURNING); MySQL carries one value back in LAST_INSERT_ID().
  bool lock_results_in_rows;
  std::string_view lock_acquire;
  std::string_view lock_release;
  std::string_view lock_release_rest;  // frees the holds left by acquires whose reply was lost
  std::string_view lock_renew;
  std::string_view lock_claim;
  std::string_view lock_list;  // columns as in `dblock locks --json`

  // Cleaner (see the .cpp for parameters). Each statement is one autocommit statement.
  std::string_view clean_delete;  // deletes up to N rows expired more than the grace ago
  std::string_view clean_count;   // column "n": how many clean_delete would take, bounded
  std::string_view clean_oldest;  // column "oldest": the oldest expires_at that has passed
};

const DialectSql& dialect_sql(Dialect dialect);

// Expands {{table:x}}, {{name:x}} and {{schema}} in a statement or migration template.
// Throws Error(kInvalidArgument) for an unknown or unterminated placeholder, or {{schema}}
// without a schema.
std::string render_sql(std::string_view templ, Dialect dialect, const TableNames& names);

}  // namespace dblock::detail
