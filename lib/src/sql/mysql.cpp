// All of dblock's SQL for MySQL (8.0+) and MariaDB (10.6+). Only syntax both accept.
#include "sql/dialect_sql.hpp"

namespace dblock::detail {

namespace {

const DialectSql kMySQL = {
    .create_schema = "CREATE DATABASE IF NOT EXISTS {{schema}}",
    // Session-scoped named lock, held across the run's DDL (which commits implicitly).
    // params: lock name (at most 64 characters), timeout in seconds. got = 1 when obtained.
    .migrator_lock = "SELECT GET_LOCK(?, ?) AS got",
    .migrator_unlock = "SELECT RELEASE_LOCK(?) AS released",
    .migrations_in_one_transaction = false,
    // params: schema name or NULL for the current database, table name
    .migrations_table_exists =
        "SELECT COUNT(*) AS present FROM information_schema.tables"
        " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?",
    .create_migrations_table =
        "CREATE TABLE IF NOT EXISTS {{table:schema_migrations}} ("
        " version INT NOT NULL PRIMARY KEY,"
        " name VARCHAR(255) NOT NULL,"
        " checksum CHAR(64) NOT NULL,"
        " applied_at DATETIME(6) NOT NULL"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    .select_migrations =
        "SELECT version, name, checksum,"
        " DATE_FORMAT(applied_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS applied_at"
        " FROM {{table:schema_migrations}} ORDER BY version",
    .insert_migration =
        "INSERT INTO {{table:schema_migrations}} (version, name, checksum, applied_at)"
        " VALUES (?, ?, ?, UTC_TIMESTAMP(6))",
};

}  // namespace

const DialectSql& mysql_sql() { return kMySQL; }

}  // namespace dblock::detail
