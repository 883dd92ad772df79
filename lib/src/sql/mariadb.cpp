// SPDX-License-Identifier: Apache-2.0
// dblock's SQL for MariaDB (10.6+): MySQL's set (mysql.cpp) with the statements MariaDB has
// better forms of. MariaDB bounds a lock wait inside the statement (SET STATEMENT ... FOR, and
// FOR UPDATE WAIT n), so a row lock needs no session setting set before and reset after its wait,
// and the bound is exact to the millisecond instead of whole seconds.
#include "sql/server_sql.hpp"

namespace dblock::detail {

const ServerSql& mysql_sql();

namespace {

ServerSql make_mariadb_sql() {
  ServerSql sql = mysql_sql();
  RowLockSql& row = sql.row_lock;
  // The create's wait for a row another transaction locked meanwhile, cut to InnoDB's shortest
  // (one second) in the statement itself.
  row.create =
      "SET STATEMENT innodb_lock_wait_timeout=1 FOR"
      " INSERT IGNORE INTO {{table:row_locks}} (lock_key, used_at)"
      " VALUES ({{param:key}}, UTC_TIMESTAMP(6))";
  row.session_wait = "";
  row.session_wait_reset = "";
  // WAIT takes whole seconds only; max_statement_time (seconds, fractional) ends the wait at the
  // exact deadline (0: no limit).
  row.wait =
      "SET STATEMENT max_statement_time={{max_seconds}} FOR"
      " SELECT fencing_token FROM {{table:row_locks}} WHERE lock_key = {{param:key}}"
      " FOR UPDATE WAIT {{seconds}}";
  row.target_wait =
      "SET STATEMENT max_statement_time={{max_seconds}} FOR"
      " SELECT 1 AS found FROM {{target}} WHERE {{column}} = {{param:row_key}}"
      " FOR UPDATE WAIT {{seconds}}";
  // GET_LOCK's timeout keeps its fraction on MariaDB (10.11: a 0.3 s wait ends after 0.3 s).
  sql.session_lock.fractional_wait = true;
  return sql;
}

}  // namespace

const ServerSql& mariadb_sql() {
  static const ServerSql sql = make_mariadb_sql();
  return sql;
}

}  // namespace dblock::detail
