// Every SQL statement dblock sends, per dialect: lib/src/sql/postgresql.cpp and
// lib/src/sql/mysql.cpp each hold the whole set for one database, to be reviewed as a whole.
//
// Statements are templates: {{table:x}} becomes the schema-qualified, quoted name of table
// prefix+x, {{name:x}} the quoted name prefix+x, {{schema}} the quoted schema name, and
// {{relaxed:text}} becomes text only when rendered for relaxed durability (see render_sql). Values
// are always bound parameters ($n on PostgreSQL, ? on MySQL), never spliced.
//
// Thread-safety: read-only data and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::detail {

struct DialectSql {
  // Migrator. Statements (statement.hpp) bound from lock, timeout_s, qualified (the quoted
  // migrations table), schema (NULL: the current one), table, version, name, checksum.
  std::string_view create_schema;            // {{schema}}
  std::string_view migrator_lock;            // one row, column "got"
  std::string_view migrator_unlock;          // empty when the lock ends at COMMIT
  bool migrations_in_one_transaction;        // DDL is transactional
  std::string_view migrator_isolation;       // the transaction's first statement; empty: none
  std::string_view migrations_table_exists;  // column "present"
  std::string_view create_migrations_table;
  std::string_view select_migrations;  // columns: version, name, checksum, applied_at
  std::string_view insert_migration;

  // The session's default isolation level, in the last column of the first row (isolation.hpp).
  std::string_view session_isolation;
  // MySQL dialect: "ON" in the last column of the first row on a Galera node (empty elsewhere).
  std::string_view galera_check;
  // MySQL dialect: the session's wsrep_sync_wait in the last column of the first row (galera.hpp).
  std::string_view galera_sync_wait;

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
  // The same for row-lock rows and version rows not used for longer than the grace.
  std::string_view clean_row_locks_delete;
  std::string_view clean_row_locks_count;
  std::string_view clean_versions_delete;
  std::string_view clean_versions_count;

  // Row lock (see the .cpp for each statement's parameters). Lock statements run inside the
  // lease's transaction. {{seconds}} / {{max_seconds}} / {{ms}} are filled in with numbers by the
  // strategy before render_sql (the servers take no parameter there).
  std::string_view row_lock_exists;          // asked before row_lock_create (empty: never)
  std::string_view row_lock_create;          // creates the key's row if missing
  std::string_view row_lock_create_mariadb;  // MySQL dialect on MariaDB (empty elsewhere)
  std::string_view row_lock_set_timeout;     // empty when the wait statement carries its timeout
  // MySQL 8.0 only: set the session's lock wait ({{seconds}}) before a bounded wait, and reset it
  // after (empty elsewhere).
  std::string_view row_lock_session_wait;
  std::string_view row_lock_session_wait_reset;
  std::string_view row_lock_try;           // NOWAIT
  std::string_view row_lock_wait;          // waits (after row_lock_set_timeout)
  std::string_view row_lock_wait_mariadb;  // MySQL dialect on MariaDB: max_statement_time
  std::string_view row_lock_stamp;         // empty when the lock statement stamps the row itself
  // A row of the caller's own table by primary key: {{target}} and {{column}} are the quoted
  // table and column; one row, column "found", when the row exists and is locked.
  std::string_view target_lock_try;
  std::string_view target_lock_wait;
  std::string_view target_lock_wait_mariadb;

  // Optimistic version / CAS.
  std::string_view version_read;    // column "version"; no row when the key has none yet
  std::string_view version_create;  // creates the key's row if missing
  std::string_view version_cas;     // moves the version on when it still is the one read

  // Operators (`dblock locks --key-prefix`, `dblock release`; see the .cpp for parameters).
  std::string_view lock_list_prefix;       // lock_list, only keys starting with a prefix
  std::string_view lock_operator_release;  // frees a row still carrying the lease and token read

  // `dblock doctor` (doctor.cpp; see the .cpp for each statement's columns). Reads only.
  std::string_view doctor_server;
  std::string_view doctor_writable;
  std::string_view doctor_replication;
  std::string_view doctor_time_zone;
  std::string_view doctor_clock;
  // Privilege probes of {{target}} (a quoted table) and its {{column}}: they touch no row, yet
  // the server checks the privilege as for any other statement.
  std::string_view doctor_probe_select;
  std::string_view doctor_probe_insert;
  std::string_view doctor_probe_update;
  std::string_view doctor_probe_delete;
  std::string_view doctor_sequence_usage;  // PostgreSQL only (empty elsewhere)
};

const DialectSql& dialect_sql(Dialect dialect);

// The value in the last column of the first row, or "" when there is none: where the statements
// that answer with a setting (session_isolation, galera_check, galera_sync_wait) put it.
std::string last_column(const Result& r);

// Replaces every `marker` in `text` with `value` (for the numeric and caller-identifier
// placeholders some statements carry besides render_sql's).
std::string replace_all(std::string text, std::string_view marker, std::string_view value);

// Expands {{table:x}}, {{name:x}} and {{schema}} in a statement or migration template, and
// {{relaxed:text}} to text when `relaxed_durability` is set (to nothing otherwise). With
// `parameters`, also {{param:name}} (see Statement in statement.hpp), appending the name of each
// bound position to it. Throws Error(kInvalidArgument) for an unknown or unterminated
// placeholder, or {{schema}} without a schema.
std::string render_sql(std::string_view templ, Dialect dialect, const TableNames& names,
                       bool relaxed_durability = false,
                       std::vector<std::string>* parameters = nullptr);

}  // namespace dblock::detail
