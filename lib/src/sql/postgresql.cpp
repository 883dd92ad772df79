// All of dblock's SQL for PostgreSQL (12+).
#include "sql/dialect_sql.hpp"

namespace dblock::detail {

namespace {

const DialectSql kPostgreSQL = {
    .create_schema = "CREATE SCHEMA IF NOT EXISTS {{schema}}",
    // Transaction-scoped: released by COMMIT/ROLLBACK, and works through transaction poolers.
    .migrator_lock = "SELECT pg_advisory_xact_lock($1::bigint) IS NULL AS got",
    .migrator_unlock = "",
    .migrations_in_one_transaction = true,
    // param: the qualified, quoted table name
    .migrations_table_exists =
        "SELECT CASE WHEN to_regclass($1) IS NULL THEN 0 ELSE 1 END AS present",
    .create_migrations_table =
        "CREATE TABLE IF NOT EXISTS {{table:schema_migrations}} ("
        " version integer PRIMARY KEY,"
        " name text NOT NULL,"
        " checksum char(64) NOT NULL,"
        " applied_at timestamptz NOT NULL)",
    .select_migrations =
        "SELECT version, name, checksum,"
        " to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS applied_at"
        " FROM {{table:schema_migrations}} ORDER BY version",
    .insert_migration =
        "INSERT INTO {{table:schema_migrations}} (version, name, checksum, applied_at)"
        " VALUES ($1, $2, $3, clock_timestamp())",
};

}  // namespace

const DialectSql& postgresql_sql() { return kPostgreSQL; }

}  // namespace dblock::detail
