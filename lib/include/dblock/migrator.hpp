// SPDX-License-Identifier: Apache-2.0
/// @file
/// The schema migrator: applies dblock's numbered, forward-only migrations and records each in a
/// migrations table (\<prefix>schema_migrations) with version, name, SHA-256 checksum and time.
///
/// The migrations for each dialect are compiled into the library (migrations/\<dialect>/
/// NNNN_name.sql), so a service can migrate at start-up with no files on disk.
///
/// Concurrency: up() is safe to run from many processes at once. On PostgreSQL the whole run is
/// one transaction serialised by a transaction-scoped advisory lock; on MySQL/MariaDB a named
/// GET_LOCK serialises runs (MySQL DDL is not transactional, so each migration is written to be
/// safe to re-run), and on a Galera node, where GET_LOCK locks that node only, a row of the
/// migrations table (version 0) serialises them across the cluster. Two migrators started
/// together both succeed; each migration is applied once.
///
/// Thread-safety: a Migrator uses the connection it was given; use it from one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/migration.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct DBLOCK_EXPORT MigrationState {
  enum class Status {
    kPending,   ///< known here, not applied
    kApplied,   ///< applied with the same checksum
    kModified,  ///< applied, but the text here differs from what was applied
    kUnknown,   ///< applied, but not among the migrations here (the database is newer)
  };
  int version = 0;
  std::string name;
  Status status = Status::kPending;
  std::string checksum;          ///< of the migration here (empty for kUnknown)
  std::string applied_checksum;  ///< recorded in the database (empty for kPending)
  std::string applied_at;        ///< UTC, ISO 8601 (empty for kPending)

  std::string id() const;
};

DBLOCK_EXPORT std::string_view to_string(MigrationState::Status status) noexcept;

class DBLOCK_EXPORT Migrator {
 public:
  /// Uses `conn` (which must outlive the Migrator) and the built-in migrations for its dialect,
  /// or `migrations` when given.
  explicit Migrator(Connection& conn, TableNames names = TableNames(),
                    std::optional<std::vector<Migration>> migrations = std::nullopt);

  /// Every known or applied migration, in version order. Changes nothing; works on a database
  /// that has no migrations table yet (everything pending).
  std::vector<MigrationState> status();

  /// Applies the pending migrations and returns them (empty when there was nothing to do).
  /// Refuses, with Error(kFailedPrecondition) naming the migration, when an applied migration's
  /// checksum differs from the one here. Applied migrations unknown here (a newer dblock ran) are
  /// left alone. A failing migration throws, naming it; on PostgreSQL nothing of the run stays.
  std::vector<MigrationState> up();

  /// Throws Error(kFailedPrecondition) unless every migration here is applied with an unchanged
  /// checksum and the database holds none unknown here. The message names the first problem and
  /// what to do.
  void verify();

  const TableNames& names() const noexcept { return names_; }

 private:
  std::vector<MigrationState> read_states(bool table_known_present);
  bool migrations_table_exists();
  void apply(const Migration& migration);
  std::vector<MigrationState> up_locked();
  // MySQL: up_locked() under the named lock `key` (GET_LOCK), and on Galera the cluster's.
  std::vector<MigrationState> up_serialised(const std::string& key);

  Connection& conn_;
  TableNames names_;
  std::vector<Migration> migrations_;
};

}  // namespace dblock
