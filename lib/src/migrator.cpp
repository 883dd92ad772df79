// SPDX-License-Identifier: Apache-2.0
#include "dblock/migrator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "dblock/error.hpp"
#include "galera.hpp"
#include "galera_migration_lock.hpp"
#include "migrations.hpp"
#include "random.hpp"
#include "sha256.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "sql_scanner.hpp"

namespace dblock {

namespace {

constexpr int kMySQLLockTimeoutSeconds = 600;
// A Galera cluster's migration lock left by a migrator that died holding it is taken over after
// this long (a run takes seconds; see galera_migration_lock.hpp).
constexpr std::chrono::seconds kGaleraLockStaleAfter(300);

// A key for the run's lock that is the same for every process migrating the same tables.
std::string lock_key(Dialect dialect, const std::string& qualified_table) {
  std::string digest = detail::sha256_hex("dblock migrate " + qualified_table);
  if (dialect == Dialect::kMySQL) return "dblock_migrate_" + digest.substr(0, 40);
  // A signed 64-bit integer from the digest's first 15 hex digits (always positive).
  return std::to_string(std::stoll(digest.substr(0, 15), nullptr, 16));
}

const detail::MigratorSql& migrator_sql(const Connection& conn) {
  return detail::server_sql(conn.server()).migrator;
}

// The schema (when one is named) and the migrations table, if they are not there yet.
void create_migrations_table(Connection& conn, const TableNames& names) {
  const Dialect d = conn.dialect();
  const auto& sql = migrator_sql(conn);
  if (!names.schema().empty()) conn.execute(detail::render_sql(sql.create_schema, d, names));
  conn.execute(detail::render_sql(sql.create_table, d, names));
}

}  // namespace

std::string MigrationState::id() const { return Migration{version, name, {}}.id(); }

std::string_view to_string(MigrationState::Status status) noexcept {
  switch (status) {
    case MigrationState::Status::kPending:
      return "pending";
    case MigrationState::Status::kApplied:
      return "applied";
    case MigrationState::Status::kModified:
      return "modified";
    case MigrationState::Status::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Migrator::Migrator(Connection& conn, TableNames names,
                   std::optional<std::vector<Migration>> migrations)
    : conn_(conn),
      names_(std::move(names)),
      migrations_(migrations ? std::move(*migrations) : builtin_migrations(conn.dialect())) {
  detail::sort_and_check(migrations_);
}

bool Migrator::migrations_table_exists() {
  const Dialect d = conn_.dialect();
  const detail::Statement exists(migrator_sql(conn_).table_exists, d, names_);
  Result r = conn_.execute(
      exists.sql(),
      exists.bind({{"qualified", Value(names_.qualified(d, "schema_migrations"))},
                   {"schema", names_.schema().empty() ? Value() : Value(names_.schema())},
                   {"table", Value(names_.name("schema_migrations"))}}));
  return r.int64_at(0, "present") != 0;
}

std::vector<MigrationState> Migrator::read_states(bool table_known_present) {
  std::map<int, MigrationState> states;
  for (const auto& m : migrations_) {
    states[m.version] =
        MigrationState{m.version, m.name, MigrationState::Status::kPending, m.checksum(), {}, {}};
  }
  if (table_known_present || migrations_table_exists()) {
    const auto& sql = migrator_sql(conn_);
    // On a Galera node, see what a migrator on another node committed a moment ago.
    detail::CausalReads causal(conn_);
    Result r = conn_.execute(detail::render_sql(sql.select, conn_.dialect(), names_));
    for (std::size_t i = 0; i < r.size(); ++i) {
      int version = static_cast<int>(r.int64_at(i, "version"));
      auto& s = states[version];
      std::string recorded = r.at(i, "checksum").value_or("");
      if (s.checksum.empty()) {  // not among the migrations here
        s.version = version;
        s.name = r.at(i, "name").value_or("");
        s.status = MigrationState::Status::kUnknown;
      } else {
        s.status = recorded == s.checksum ? MigrationState::Status::kApplied
                                          : MigrationState::Status::kModified;
      }
      s.applied_checksum = recorded;
      s.applied_at = r.at(i, "applied_at").value_or("");
    }
  }
  std::vector<MigrationState> out;
  for (auto& [v, s] : states) out.push_back(std::move(s));
  return out;
}

std::vector<MigrationState> Migrator::status() { return read_states(false); }

void Migrator::apply(const Migration& migration) {
  const Dialect d = conn_.dialect();
  std::string script = detail::render_sql(migration.sql, d, names_);
  auto statements = detail::split_statements(script, d);
  for (std::size_t i = 0; i < statements.size(); ++i) {
    try {
      conn_.execute(statements[i]);
    } catch (const Error& e) {
      // MySQL 8.0 has no ADD COLUMN IF NOT EXISTS: a column that is there already (added by a
      // migrator that stopped before recording the migration, or by one on another Galera node)
      // was added. 1060: ER_DUP_FIELDNAME.
      constexpr int kDuplicateColumn = 1060;
      if (d == Dialect::kMySQL && e.server_errno() == kDuplicateColumn) continue;
      std::string undo = migrator_sql(conn_).in_one_transaction
                             ? "nothing of this run was kept"
                             : "statements before it stay applied (MySQL DDL is not "
                               "transactional); fix the cause and run `dblock migrate up` again";
      throw Error(e.code(),
                  "migration " + migration.id() + " failed at statement " + std::to_string(i + 1) +
                      " of " + std::to_string(statements.size()) + ": " + e.what() + "; " + undo,
                  e.sqlstate(), e.server_errno());
    }
  }
  const detail::Statement insert(migrator_sql(conn_).insert, d, names_);
  conn_.execute(insert.sql(), insert.bind({{"version", Value(migration.version)},
                                           {"name", Value(migration.name)},
                                           {"checksum", Value(migration.checksum())}}));
}

std::vector<MigrationState> Migrator::up_locked() {
  create_migrations_table(conn_, names_);
  auto states = read_states(true);
  for (const auto& s : states) {
    if (s.status == MigrationState::Status::kModified) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "migration " + s.id() + " was changed after it was applied (checksum " +
                      s.applied_checksum.substr(0, 12) + "... in the database, " +
                      s.checksum.substr(0, 12) +
                      "... here); restore its original text and add a new migration instead");
    }
  }
  std::vector<MigrationState> applied;
  for (const auto& m : migrations_) {
    auto it = std::find_if(states.begin(), states.end(),
                           [&](const MigrationState& s) { return s.version == m.version; });
    if (it == states.end() || it->status != MigrationState::Status::kPending) continue;
    apply(m);
    applied.push_back(*it);
    applied.back().status = MigrationState::Status::kApplied;
  }
  return applied;
}

std::vector<MigrationState> Migrator::up() {
  const Dialect d = conn_.dialect();
  const auto& sql = migrator_sql(conn_);
  const std::string key = lock_key(d, names_.qualified(d, "schema_migrations"));
  if (sql.in_one_transaction) {
    conn_.begin();
    try {
      // Before the lock: the isolation level must be set before the transaction's first query
      // (see MigratorSql::isolation in the server's SQL file).
      if (!sql.isolation.empty()) conn_.execute(sql.isolation);
      const detail::Statement lock(sql.lock, d, names_);
      conn_.execute(lock.sql(), lock.bind({{"lock", Value(key)}}));
      auto applied = up_locked();
      conn_.commit();
      return applied;
    } catch (...) {
      conn_.rollback();
      throw;
    }
  }
  // GET_LOCK is node-local on a Galera cluster, so up_serialised() also takes the cluster's
  // migration lock there (galera_migration_lock.hpp). What is left to collide is what comes before
  // it (creating the migrations table) and certification: a run that loses one (reported as a
  // deadlock, on any of its statements) or finds a migration recorded by another run first (a
  // duplicate key) starts again and goes on from what is applied by then; the migrations are
  // idempotent (IF NOT EXISTS; MODIFY to the type a column already has). Runs that collided tend
  // to collide again in step, so each waits a random while (growing with the attempts) first.
  constexpr int kAttempts = 10;
  for (int attempt = 1;; ++attempt) {
    try {
      return up_serialised(key);
    } catch (const Error& e) {
      const bool concurrent = e.code() == ErrorCode::kUniqueViolation ||
                              e.code() == ErrorCode::kDeadlock ||
                              e.code() == ErrorCode::kSerializationFailure;
      if (!concurrent || attempt >= kAttempts || conn_.broken()) throw;
      std::uniform_int_distribution<int> pause_ms(0, 10 << std::min(attempt, 4));
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(detail::jitter_generator())));
    }
  }
}

std::vector<MigrationState> Migrator::up_serialised(const std::string& key) {
  const Dialect d = conn_.dialect();
  const detail::Statement lock(migrator_sql(conn_).lock, d, names_);
  const detail::Statement unlock(migrator_sql(conn_).unlock, d, names_);
  Result got = conn_.execute(
      lock.sql(),
      lock.bind({{"lock", Value(key)}, {"timeout_s", Value(kMySQLLockTimeoutSeconds)}}));
  if (!got.at(0, "got") || *got.at(0, "got") != "1") {
    throw Error(ErrorCode::kLockWaitTimeout, "another migrator held the migration lock for " +
                                                 std::to_string(kMySQLLockTimeoutSeconds) +
                                                 " s; check for a stuck `dblock "
                                                 "migrate up` and try again");
  }
  try {
    // GET_LOCK is node-local on Galera: a row of the migrations table keeps migrators on the
    // other nodes out too.
    std::optional<detail::GaleraMigrationLock> cluster;
    if (detail::galera_node(conn_)) {
      create_migrations_table(conn_, names_);
      cluster.emplace(conn_, names_, std::chrono::seconds(kMySQLLockTimeoutSeconds),
                      kGaleraLockStaleAfter);
    }
    auto applied = up_locked();
    cluster.reset();
    conn_.execute(unlock.sql(), unlock.bind({{"lock", Value(key)}}));
    return applied;
  } catch (...) {
    if (!conn_.broken()) {
      try {
        conn_.execute(unlock.sql(), unlock.bind({{"lock", Value(key)}}));
      } catch (const Error&) {
        // The server drops the lock with the session anyway.
      }
    }
    throw;
  }
}

void Migrator::verify() {
  if (!migrations_table_exists()) {
    throw Error(
        ErrorCode::kUndefinedTable,
        "table " + names_.qualified(conn_.dialect(), "schema_migrations") +
            " is missing: dblock's schema was never migrated here; run `dblock migrate up`");
  }
  for (const auto& s : read_states(true)) {
    switch (s.status) {
      case MigrationState::Status::kApplied:
        break;
      case MigrationState::Status::kPending:
        throw Error(ErrorCode::kFailedPrecondition,
                    "migration " + s.id() + " is not applied; run `dblock migrate up`");
      case MigrationState::Status::kModified:
        throw Error(ErrorCode::kFailedPrecondition,
                    "migration " + s.id() +
                        " differs from the one applied (checksum mismatch); restore its "
                        "original text and add a new migration instead");
      case MigrationState::Status::kUnknown:
        throw Error(ErrorCode::kFailedPrecondition,
                    "the database has migration " + s.id() +
                        ", which this dblock does not know; upgrade dblock");
    }
  }
}

}  // namespace dblock
