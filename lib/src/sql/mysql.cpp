// SPDX-License-Identifier: Apache-2.0
// All of dblock's SQL for MySQL (8.0+), and for MariaDB (10.6+) but for the statements
// mariadb.cpp replaces. Only syntax both accept, so a connection that cannot tell MariaDB from
// MySQL (Connection::server()) works with this set on either.
#include "sql/server_sql.hpp"

namespace dblock::detail {

namespace {

constexpr MigratorSql kMigrator = {
    .create_schema = "CREATE DATABASE IF NOT EXISTS {{schema}}",
    // Session-scoped named lock, held across the run's DDL (which commits implicitly).
    // params: lock name (at most 64 characters), timeout in seconds. got = 1 when obtained.
    .lock = "SELECT GET_LOCK({{param:lock}}, {{param:timeout_s}}) AS got",
    .unlock = "SELECT RELEASE_LOCK({{param:lock}}) AS released",
    .in_one_transaction = false,
    // No transaction: DDL commits implicitly, and every statement runs in autocommit, so each
    // read sees what was committed before it whatever transaction_isolation says.
    .isolation = "",
    // schema: NULL for the current database.
    .table_exists =
        "SELECT COUNT(*) AS present FROM information_schema.tables"
        " WHERE table_schema = COALESCE({{param:schema}}, DATABASE())"
        " AND table_name = {{param:table}}",
    .create_table =
        "CREATE TABLE IF NOT EXISTS {{table:schema_migrations}} ("
        " version INT NOT NULL PRIMARY KEY,"
        " name VARCHAR(255) NOT NULL,"
        " checksum CHAR(64) NOT NULL,"
        " applied_at DATETIME(6) NOT NULL"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    .select =
        "SELECT version, name, checksum,"
        " DATE_FORMAT(applied_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS applied_at"
        " FROM {{table:schema_migrations}} WHERE version > 0 ORDER BY version",
    .insert =
        "INSERT INTO {{table:schema_migrations}} (version, name, checksum, applied_at)"
        " VALUES ({{param:version}}, {{param:name}}, {{param:checksum}}, UTC_TIMESTAMP(6))",
    // Certification makes the insert exclusive across a Galera cluster's nodes: of two at once,
    // one fails with a duplicate key or a deadlock. The holder's row names it for operators.
    .cluster_lock =
        "INSERT INTO {{table:schema_migrations}} (version, name, checksum, applied_at)"
        " VALUES (0, {{param:name}}, {{param:holder}}, UTC_TIMESTAMP(6))",
    .cluster_unlock =
        "DELETE FROM {{table:schema_migrations}} WHERE version = 0 AND checksum = {{param:holder}}",
    .cluster_lock_stale =
        "DELETE FROM {{table:schema_migrations}}"
        " WHERE version = 0 AND applied_at < UTC_TIMESTAMP(6) - INTERVAL {{param:age_s}} SECOND",
};

constexpr SessionSql kSession = {
    // MySQL 8.0 calls the variable transaction_isolation, MariaDB 10.x tx_isolation; SHOW
    // answers for either (columns Variable_name, Value: the level is the last column).
    .isolation =
        "SHOW SESSION VARIABLES WHERE Variable_name IN ('transaction_isolation', 'tx_isolation')",
    // MariaDB has wsrep_on (OFF unless the server is a Galera node); MySQL 8 has none: no row.
    .galera_check = "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'",
    .galera_sync_wait = "SHOW SESSION VARIABLES LIKE 'wsrep_sync_wait'",
    .server_keepalive = "",
};

constexpr UniqueKeySql kUniqueKey = {
    // Times are UTC_TIMESTAMP(6) (the server's clock, constant within a statement). A row is
    // free when expires_at has passed: release sets hold_count = 0 and expires_at to now.
    // Release frees rows, never deletes them; only the cleaner deletes (rows long past expiry).
    // Lock-delay: a holder's expiry is now + ttl_ms + lock_delay_ms; its own hold is live while
    // expires_at > now + lock_delay_ms (see UniqueKeySql in server_sql.hpp).
    //
    // Fencing tokens: the database clock in microseconds since 1970 (TIMESTAMPDIFF, which does
    // not depend on the session time zone), raised past the row's previous token.
    //
    // MySQL has no RETURNING, so the statements hand one number back through LAST_INSERT_ID(expr)
    // (read from the OK packet: no extra round trip). ON DUPLICATE KEY UPDATE assigns left to
    // right and later expressions see earlier assignments, so every assignment below only reads
    // columns assigned after it; expires_at, which decides "free", is assigned last.
    .results_in_rows = false,
    .reread_id = "SELECT LAST_INSERT_ID() AS id",
    .release_count_plus_one = true,
    // A Statement (sql/statement.hpp): key, lease_id (this attempt's; a retry reuses it), host,
    // process, thread, ttl_ms, metadata (JSON or NULL). LAST_INSERT_ID() = the fencing token when
    // acquired (fresh, re-entered or a retry of an attempt that already succeeded), 0 when another
    // owner holds the key.
    .acquire =
        "INSERT INTO {{table:locks}} (lock_key, lease_id, owner_host, owner_process, owner_thread,"
        " hold_count, fencing_token, acquired_at, expires_at, metadata)"
        " VALUES ({{param:key}}, {{param:lease_id}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, 1,"
        " LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))),"
        " UTC_TIMESTAMP(6),"
        " UTC_TIMESTAMP(6)"
        "   + INTERVAL ({{param:ttl_ms}} + {{param:lock_delay_ms}}) * 1000 MICROSECOND,"
        " {{param:metadata}})"
        " ON DUPLICATE KEY UPDATE"
        " fencing_token = CASE"
        "   WHEN expires_at <= UTC_TIMESTAMP(6)"
        "     THEN LAST_INSERT_ID(GREATEST(fencing_token + 1, VALUES(fencing_token)))"
        "   WHEN owner_host = VALUES(owner_host) AND owner_process = VALUES(owner_process)"
        "     AND owner_thread = VALUES(owner_thread) AND hold_count > 0"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        "     THEN LAST_INSERT_ID(fencing_token)"
        "   ELSE fencing_token + LAST_INSERT_ID(0) END,"
        " acquired_at = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(acquired_at), acquired_at),"
        " metadata = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(metadata), metadata),"
        " previous_lease_id = IF(expires_at <= UTC_TIMESTAMP(6), lease_id, previous_lease_id),"
        " hold_count = CASE WHEN expires_at <= UTC_TIMESTAMP(6) THEN 1"
        "   WHEN owner_host = VALUES(owner_host) AND owner_process = VALUES(owner_process)"
        "     AND owner_thread = VALUES(owner_thread) AND hold_count > 0"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        "     THEN IF(lease_id = VALUES(lease_id), hold_count, hold_count + 1)"
        "   ELSE hold_count END,"
        " lease_id = IF(expires_at <= UTC_TIMESTAMP(6) OR (owner_host = VALUES(owner_host)"
        "   AND owner_process = VALUES(owner_process) AND owner_thread = VALUES(owner_thread)"
        "   AND hold_count > 0"
        "   AND expires_at > UTC_TIMESTAMP(6)"
        "     + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND),"
        "   VALUES(lease_id), lease_id),"
        " owner_host = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_host), owner_host),"
        " owner_process = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_process), owner_process),"
        " owner_thread = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_thread), owner_thread),"
        // Owners changed above only when the row was free, which the first WHEN catches. The
        // owner's re-entry needs a live hold (hold_count > 0: a row released and kept taken for
        // its min_hold is no one's to re-enter) whose TTL has not run out (a hold lapsed into its
        // lock-delay is no one's either: re-entered, it would hand its token to a new tenure);
        // lease_id and expires_at read hold_count after its assignment above, which leaves it 0
        // for such a row and above 0 for a re-entry.
        " expires_at = CASE WHEN expires_at <= UTC_TIMESTAMP(6) THEN VALUES(expires_at)"
        "   WHEN owner_host = VALUES(owner_host) AND owner_process = VALUES(owner_process)"
        "     AND owner_thread = VALUES(owner_thread) AND hold_count > 0"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        "     THEN GREATEST(expires_at, VALUES(expires_at))"
        "   ELSE expires_at END",
    .acquire_leaves_queue = false,  // a fair waiter that got the key then sends leave
    .acquire_joins_queue = false,   // a refused waiter then sends enqueue
    // A Statement (sql/statement.hpp): key, host, process, thread, token, release_id.
    // The release id is random per release call; a retry after a lost reply reuses it. One row
    // matched when the lease was held; LAST_INSERT_ID() = the remaining hold_count plus one (1:
    // the key is free now; never 0 for a matched row, so a reply whose value a trigger cleared is
    // told from an answer: see UniqueKeySql::reread_id). Idempotent under retry: the release id
    // is written into lease_id, and a row that already carries it was released by this very
    // call, so the retry changes nothing and reports the count left by the first attempt (a
    // decrement applied twice would drop an outer hold). A row another owner took since carries the
    // release id in previous_lease_id: the
    // retry changes nothing there either and reports 1 (the first attempt freed the key).
    // Assignments run left to right and read columns assigned after them only.
    .release =
        "UPDATE {{table:locks}}"
        " SET expires_at = IF(lease_id = {{param:release_id}}"
        "   OR previous_lease_id = {{param:release_id}}, expires_at,"
        "   IF(hold_count = 1, GREATEST(UTC_TIMESTAMP(6),"
        "     acquired_at + INTERVAL {{param:min_hold_ms}} * 1000 MICROSECOND), expires_at)),"
        " hold_count = IF(previous_lease_id = {{param:release_id}},"
        "   hold_count + LAST_INSERT_ID(1) - 1,"
        "   LAST_INSERT_ID(IF(lease_id = {{param:release_id}}, hold_count, hold_count - 1) + 1)"
        "     - 1),"
        " lease_id = IF(previous_lease_id = {{param:release_id}}, lease_id, {{param:release_id}})"
        " WHERE lock_key = {{param:key}} AND ((owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND (lease_id = {{param:release_id}}"
        "   OR (hold_count > 0"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND)))"
        "   OR previous_lease_id = {{param:release_id}})",
    // Parameters as release. Run right after a release
    // that left holds behind although this process holds no other lease of the owner on the
    // key: those holds belong to acquires whose reply never came (the caller got an error and
    // no lease), and would otherwise keep the key for as long as the owner keeps re-entering it.
    // Frees the row only if it still carries the release id that release just wrote.
    .release_rest =
        "UPDATE {{table:locks}} SET hold_count = 0, expires_at = GREATEST(UTC_TIMESTAMP(6),"
        "   acquired_at + INTERVAL {{param:min_hold_ms}} * 1000 MICROSECOND)"
        " WHERE lock_key = {{param:key}} AND owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND lease_id = {{param:release_id}}"
        " AND hold_count > 0"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND",
    // A Statement: see UniqueKeySql::hand_over. The WHERE reads the row as it was; the
    // assignments run left to right and read lease_id, assigned last, as it was, so a row that
    // already carries the waiter's lease id (this statement's own earlier attempt) keeps its
    // token and times. Fair: only to the queue's first live waiter (which then leaves the queue
    // itself, as after an acquire).
    .hand_over =
        "UPDATE {{table:locks}} SET"
        " fencing_token = LAST_INSERT_ID(IF(lease_id = {{param:to_lease_id}}, fencing_token,"
        "   GREATEST(fencing_token + 1,"
        "     TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))),"
        " acquired_at = IF(lease_id = {{param:to_lease_id}}, acquired_at, UTC_TIMESTAMP(6)),"
        " metadata = IF(lease_id = {{param:to_lease_id}}, metadata, {{param:metadata}}),"
        " expires_at = IF(lease_id = {{param:to_lease_id}}, expires_at,"
        "   UTC_TIMESTAMP(6)"
        "   + INTERVAL ({{param:ttl_ms}} + {{param:to_lock_delay_ms}}) * 1000 MICROSECOND),"
        " hold_count = 1, owner_host = {{param:to_host}}, owner_process = {{param:to_process}},"
        " owner_thread = {{param:to_thread}}, lease_id = {{param:to_lease_id}}"
        " WHERE lock_key = {{param:key}} AND hold_count > 0 AND expires_at > UTC_TIMESTAMP(6)"
        " AND ((owner_host = {{param:host}} AND owner_process = {{param:process}}"
        "     AND owner_thread = {{param:thread}} AND fencing_token = {{param:token}}"
        "     AND (hold_count = 1 OR {{param:any_holds}} = 1)"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        "{{fair}}     AND (SELECT w.waiter_id FROM {{table:lock_waiters}} w"
        "       WHERE w.lock_key = {{param:key}} AND w.expires_at > UTC_TIMESTAMP(6)"
        "       ORDER BY w.seq LIMIT 1) = {{param:to_waiter_id}}{{/fair}})"
        "   OR (lease_id = {{param:to_lease_id}} AND owner_host = {{param:to_host}}"
        "     AND owner_process = {{param:to_process}} AND owner_thread = {{param:to_thread}}))",
    // A Statement: ttl_ms, key, host, process, thread, token. One row matched when the
    // lease is still held (CLIENT_FOUND_ROWS: also when expires_at stays as it was). Never moves
    // expires_at earlier: the row is shared by every reentrant hold of the owner, and another of
    // them (acquired or renewed with a longer TTL) relies on the later expiry.
    .renew =
        "UPDATE {{table:locks}} SET expires_at = GREATEST(expires_at,"
        "   UTC_TIMESTAMP(6)"
        "     + INTERVAL ({{param:ttl_ms}} + {{param:lock_delay_ms}}) * 1000 MICROSECOND)"
        " WHERE lock_key = {{param:key}} AND owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND hold_count > 0"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND",
    // A Statement: key, claim_id, host, process, thread, metadata (JSON or NULL). A claim never
    // expires ('9999-12-31'). LAST_INSERT_ID() = the fencing token when this call (or an earlier
    // attempt with the same claim id) claimed the key, 0 when it is already claimed or held.
    .claim =
        "INSERT INTO {{table:locks}} (lock_key, lease_id, owner_host, owner_process, owner_thread,"
        " hold_count, fencing_token, acquired_at, expires_at, metadata)"
        " VALUES ({{param:key}}, {{param:claim_id}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, 1,"
        " LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))),"
        " UTC_TIMESTAMP(6), '9999-12-31 23:59:59.999999', {{param:metadata}})"
        " ON DUPLICATE KEY UPDATE"
        " fencing_token = CASE WHEN lease_id = VALUES(lease_id) THEN LAST_INSERT_ID(fencing_token)"
        "   WHEN expires_at <= UTC_TIMESTAMP(6)"
        "     THEN LAST_INSERT_ID(GREATEST(fencing_token + 1, VALUES(fencing_token)))"
        "   ELSE fencing_token + LAST_INSERT_ID(0) END,"
        " acquired_at = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(acquired_at), acquired_at),"
        " metadata = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(metadata), metadata),"
        " hold_count = IF(expires_at <= UTC_TIMESTAMP(6), 1, hold_count),"
        " owner_host = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_host), owner_host),"
        " owner_process = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_process), owner_process),"
        " owner_thread = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_thread), owner_thread),"
        " lease_id = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(lease_id), lease_id),"
        " expires_at = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(expires_at), expires_at)",
    // Fair waiting: acquire (an INSERT ... VALUES) cannot carry the queue check, so it is asked
    // first, as a plain (non-locking, consistent) read. A waiter that registers between this read
    // and the acquire may be passed once; the lock itself is decided by the acquire as always.
    // Column "ahead": the live waiters queued before the caller (at most 100), which sets how
    // often a waiter polls, since no release wakes it here.
    .fair_check =
        "SELECT q.ahead, (q.ahead > 0 AND NOT EXISTS (SELECT 1 FROM {{table:locks}} m"
        "   WHERE m.lock_key = {{param:key}} AND m.expires_at > UTC_TIMESTAMP(6)"
        "   AND m.owner_host = {{param:host}} AND m.owner_process = {{param:process}}"
        "   AND m.owner_thread = {{param:thread}} AND m.hold_count > 0)) AS wait"
        " FROM (SELECT COUNT(*) AS ahead FROM (SELECT 1 FROM {{table:lock_waiters}} w"
        "   WHERE w.lock_key = {{param:key}} AND w.expires_at > UTC_TIMESTAMP(6)"
        "   AND w.seq < COALESCE({{param:seq}}, 9223372036854775807) LIMIT 100) a) q",
    .enqueue =
        "INSERT INTO {{table:lock_waiters}} (waiter_id, lock_key, owner_host, owner_process,"
        " owner_thread, registered_at, expires_at)"
        " VALUES ({{param:waiter_id}}, {{param:key}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, UTC_TIMESTAMP(6),"
        " UTC_TIMESTAMP(6) + INTERVAL {{param:ttl_ms}} * 1000 MICROSECOND)"
        " ON DUPLICATE KEY UPDATE seq = LAST_INSERT_ID(seq), expires_at = VALUES(expires_at)",
    .leave = "DELETE FROM {{table:lock_waiters}} WHERE waiter_id = {{param:waiter_id}}",
    // A candidate's registration for hand-offs: a place in the key's queue with the lease a
    // hand-off gives it. Sent again, it keeps its place and takes the newer lease (as enqueue).
    .offer =
        "INSERT INTO {{table:lock_waiters}} (waiter_id, lock_key, owner_host, owner_process,"
        " owner_thread, registered_at, expires_at, ttl_ms, lock_delay_ms, metadata)"
        " VALUES ({{param:waiter_id}}, {{param:key}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, UTC_TIMESTAMP(6),"
        " UTC_TIMESTAMP(6) + INTERVAL {{param:place_ttl_ms}} * 1000 MICROSECOND,"
        " {{param:ttl_ms}}, {{param:lock_delay_ms}}, {{param:metadata}})"
        " ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at), ttl_ms = VALUES(ttl_ms),"
        " lock_delay_ms = VALUES(lock_delay_ms), metadata = VALUES(metadata)",
    .candidate =
        "SELECT waiter_id, owner_host, owner_process, owner_thread, ttl_ms,"
        " COALESCE(lock_delay_ms, 0) AS lock_delay_ms,"
        " CAST(metadata AS CHAR) AS metadata FROM {{table:lock_waiters}}"
        " WHERE lock_key = {{param:key}} AND expires_at > UTC_TIMESTAMP(6)"
        " AND ttl_ms IS NOT NULL AND NOT (owner_host = {{param:host}}"
        "   AND owner_process = {{param:process}} AND owner_thread = {{param:thread}})"
        " AND ({{param:to_thread}} IS NULL OR owner_thread = {{param:to_thread}})"
        " ORDER BY seq LIMIT 1",
    .wake = "",  // no notifications: waiters poll
    // A locking read (LOCK IN SHARE MODE, which MySQL 8 and MariaDB both accept): it reads the
    // latest committed row whatever the transaction's snapshot, and holds a shared lock on it
    // until the transaction ends, so a takeover, release, renewal or cleaner waits for the commit.
    // UTC_TIMESTAMP(6) is this statement's start.
    .fence =
        "SELECT fencing_token FROM {{table:locks}} WHERE lock_key = {{param:key}}"
        " AND owner_host = {{param:host}} AND owner_process = {{param:process}}"
        " AND owner_thread = {{param:thread}} AND fencing_token = {{param:token}}"
        " AND hold_count > 0"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        " LOCK IN SHARE MODE",
};

// The counting semaphore. Times are UTC_TIMESTAMP(6), as in the unique-key lock. A permit row
// is free once expires_at has passed (release sets it to now); rows are freed, never deleted,
// but by the cleaner. MySQL's INSERT ... VALUES cannot pick a slot, so the key's slots are read
// first (a plain, consistent read) and the strategy picks one; the upsert then decides.
#define DBLOCK_PERMIT_OWNER                                            \
  " owner_host = {{param:host}} AND owner_process = {{param:process}}" \
  " AND owner_thread = {{param:thread}} AND lock_key = {{param:key}}"  \
  " AND slot = {{param:slot}} AND fencing_token = {{param:token}}"

constexpr SemaphoreSql kSemaphore = {
    .acquire = "",
    .slots =
        "SELECT 'limit' AS kind, permits AS n FROM {{table:semaphores}}"
        " WHERE lock_key = {{param:key}}"
        " UNION ALL SELECT IF(lease_id = {{param:lease_id}}, 'mine', 'taken'), slot"
        " FROM {{table:semaphore_permits}}"
        " WHERE lock_key = {{param:key}} AND expires_at > UTC_TIMESTAMP(6)",
    // LAST_INSERT_ID() = the token when the slot was free (or this lease id's own: a retry of
    // an attempt that took it), 0 when another lease holds it, or when the key's limit is no
    // longer the caller's (changed, or deleted by the cleaner since `slots` read it). The row
    // comes from the key's limit row, read with a shared lock held until the permit is
    // committed: the cleaner cannot delete a limit while a permit of its key is being taken (see
    // kCleanedTables). Assignments run left to right and read only columns assigned after them;
    // expires_at, which decides "free", is last.
    .acquire_slot =
        "INSERT INTO {{table:semaphore_permits}} (lock_key, slot, lease_id, owner_host,"
        " owner_process, owner_thread, fencing_token, acquired_at, expires_at, metadata)"
        " SELECT {{param:key}}, {{param:slot}}, {{param:lease_id}}, {{param:host}},"
        " {{param:process}}, {{param:thread}},"
        " LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
        "   * 1024 + {{param:slot}}),"
        " UTC_TIMESTAMP(6),"
        " UTC_TIMESTAMP(6)"
        "   + INTERVAL ({{param:ttl_ms}} + {{param:lock_delay_ms}}) * 1000 MICROSECOND,"
        " {{param:metadata}}"
        " FROM {{table:semaphores}} s WHERE s.lock_key = {{param:key}}"
        " AND s.permits = {{param:permits}} LOCK IN SHARE MODE"
        " ON DUPLICATE KEY UPDATE"
        " fencing_token = CASE WHEN lease_id = VALUES(lease_id) THEN LAST_INSERT_ID(fencing_token)"
        "   WHEN expires_at <= UTC_TIMESTAMP(6)"
        "     THEN LAST_INSERT_ID(GREATEST(fencing_token + 1024, VALUES(fencing_token)))"
        "   ELSE fencing_token + LAST_INSERT_ID(0) END,"
        " acquired_at = IF(expires_at <= UTC_TIMESTAMP(6) AND lease_id <> VALUES(lease_id),"
        "   VALUES(acquired_at), acquired_at),"
        " metadata = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(metadata), metadata),"
        " owner_host = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_host), owner_host),"
        " owner_process = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_process), owner_process),"
        " owner_thread = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner_thread), owner_thread),"
        " previous_lease_id = IF(expires_at <= UTC_TIMESTAMP(6) AND lease_id <> VALUES(lease_id),"
        "   lease_id, previous_lease_id),"
        " lease_id = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(lease_id), lease_id),"
        " expires_at = CASE WHEN expires_at <= UTC_TIMESTAMP(6) THEN VALUES(expires_at)"
        "   WHEN lease_id = VALUES(lease_id) THEN GREATEST(expires_at, VALUES(expires_at))"
        "   ELSE expires_at END",
    .define =
        "INSERT INTO {{table:semaphores}} (lock_key, permits, changed_at)"
        " VALUES ({{param:key}}, {{param:permits}}, UTC_TIMESTAMP(6))"
        " ON DUPLICATE KEY UPDATE lock_key = lock_key",
    .set_limit =
        "INSERT INTO {{table:semaphores}} (lock_key, permits, changed_at)"
        " VALUES ({{param:key}}, {{param:permits}}, UTC_TIMESTAMP(6))"
        " ON DUPLICATE KEY UPDATE permits = VALUES(permits), changed_at = VALUES(changed_at)",
    // The release id is written into lease_id: a retry after a lost reply finds the row its
    // first attempt freed (and changes nothing) instead of reporting the permit not held; or,
    // when another lease took the slot since, finds it in previous_lease_id (and changes nothing
    // either). CLIENT_FOUND_ROWS: one row matched either way.
    .release =
        "UPDATE {{table:semaphore_permits}}"
        " SET expires_at = IF(lease_id = {{param:release_id}}"
        "   OR previous_lease_id = {{param:release_id}}, expires_at, GREATEST(UTC_TIMESTAMP(6),"
        "     acquired_at + INTERVAL {{param:min_hold_ms}} * 1000 MICROSECOND)),"
        " lease_id = IF(previous_lease_id = {{param:release_id}}, lease_id, {{param:release_id}})"
        " WHERE (" DBLOCK_PERMIT_OWNER
        " AND (lease_id = {{param:release_id}}"
        "   OR (lease_id = {{param:lease_id}}"
        "     AND expires_at > UTC_TIMESTAMP(6)"
        "       + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND)))"
        " OR (lock_key = {{param:key}} AND slot = {{param:slot}}"
        "   AND previous_lease_id = {{param:release_id}})",
    // CLIENT_FOUND_ROWS: one row matched also when expires_at stays as it was.
    .renew =
        "UPDATE {{table:semaphore_permits}} SET expires_at = GREATEST(expires_at,"
        "   UTC_TIMESTAMP(6)"
        "     + INTERVAL ({{param:ttl_ms}} + {{param:lock_delay_ms}}) * 1000 MICROSECOND)"
        " WHERE" DBLOCK_PERMIT_OWNER
        " AND lease_id = {{param:lease_id}}"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND",
    .fence =
        "SELECT fencing_token FROM {{table:semaphore_permits}} WHERE" DBLOCK_PERMIT_OWNER
        " AND lease_id = {{param:lease_id}}"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        " LOCK IN SHARE MODE",
    // Locking reads of the latest committed rows. The WHERE names only the primary key, so every
    // row of the range is locked whatever its expiry; expiry is counted after the wait.
    .fence_exclusive =
        "SELECT fencing_token FROM {{table:semaphore_permits}} WHERE" DBLOCK_PERMIT_OWNER
        " AND lease_id = {{param:lease_id}}"
        " AND expires_at > UTC_TIMESTAMP(6) + INTERVAL {{param:lock_delay_ms}} * 1000 MICROSECOND"
        " FOR UPDATE",
    .live_in_shared =
        "SELECT COUNT(IF(expires_at > UTC_TIMESTAMP(6), 1, NULL)) AS n"
        " FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND slot BETWEEN {{param:first}} AND {{param:last}} LOCK IN SHARE MODE",
    .live_in_exclusive =
        "SELECT COUNT(IF(expires_at > UTC_TIMESTAMP(6), 1, NULL)) AS n"
        " FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND slot BETWEEN {{param:first}} AND {{param:last}} FOR UPDATE",
    // A plain (consistent) read in autocommit: the loss it explains has happened.
    .loss =
        "SELECT COUNT(IF(expires_at > UTC_TIMESTAMP(6) AND lease_id NOT LIKE 'r-%'"
        "   AND fencing_token <> {{param:token}}, 1, NULL)) AS taken,"
        " COUNT(IF(slot = {{param:slot}} AND fencing_token = {{param:token}}"
        "   AND lease_id = {{param:lease_id}}, 1, NULL)) AS mine"
        " FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND (slot = {{param:slot}} OR slot BETWEEN {{param:first}} AND {{param:last}})",
};

#undef DBLOCK_PERMIT_OWNER

// The tables the cleaner empties, and whose privileges `dblock doctor` checks: a table of a
// new strategy is added here. Each with a delete (grace_ms, limit: the batch size) and a count
// (grace_ms, limit: the most rows to count; a read that changes nothing, column "n").
constexpr CleanedTable kCleanedTables[] = {
    // The cleaner. Statements (sql/statement.hpp): grace_ms, limit (batch size). Deletes at most
    // that many rows whose expires_at lies more than the grace in the past, oldest first, walking
    // the expires_at index (MySQL 8 and MariaDB both accept DELETE ... ORDER BY ... LIMIT). InnoDB
    // re-evaluates the WHERE on the latest committed version of each row it locks, so a row renewed
    // by a transaction this DELETE waited for survives; a row another cleaner deleted first is not
    // seen, so no row is counted twice. Claims ('9999-12-31') never qualify.
    {"locks",
     "DELETE FROM {{table:locks}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND"
     " ORDER BY expires_at LIMIT {{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:locks}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND "
     "LIMIT {{param:limit}}) s"},
    // Row locks and versions unused for longer than the grace.
    // A row lock held longer than the grace makes a batch wait for it (InnoDB's DELETE cannot
    // skip locked rows); the batch is retried after a lock wait timeout.
    {"row_locks",
     "DELETE FROM {{table:row_locks}}"
     " WHERE used_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND ORDER "
     "BY used_at LIMIT {{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:row_locks}}"
     " WHERE used_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND LIMIT "
     "{{param:limit}}) s"},
    {"versions",
     "DELETE FROM {{table:versions}}"
     " WHERE updated_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND "
     "ORDER BY updated_at LIMIT "
     "{{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:versions}}"
     " WHERE updated_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND "
     "LIMIT {{param:limit}}) s"},
    // Registrations of fair waiters that stopped refreshing them (a waiter that died).
    {"lock_waiters",
     "DELETE FROM {{table:lock_waiters}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND"
     " ORDER BY expires_at LIMIT {{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:lock_waiters}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND "
     "LIMIT {{param:limit}}) s"},
    // Semaphore permits unused for longer than the grace.
    {"semaphore_permits",
     "DELETE FROM {{table:semaphore_permits}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND"
     " ORDER BY expires_at LIMIT {{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:semaphore_permits}}"
     " WHERE expires_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND "
     "LIMIT {{param:limit}}) s"},
    // The limits of semaphore keys left without any permit row (the permits were cleaned above),
    // unchanged for longer than the grace. Never while a permit of the key is live, whatever the
    // grace: an acquire share-locks the limit row until its permit is committed (acquire_slot),
    // so the candidates are locked first (skipping the rows acquires hold) and each is deleted
    // only if a read made after that lock (READ COMMITTED: a fresh snapshot per statement) still
    // shows no permit row of its key (lock_sql). An acquire waiting for the lock then finds no
    // limit and stores it again.
    {"semaphores",
     "DELETE FROM {{table:semaphores}} WHERE lock_key IN (SELECT j.k FROM JSON_TABLE("
     "{{param:keys}}, '$[*]' COLUMNS (k VARCHAR(255) PATH '$')) AS j)"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p"
     "   WHERE p.lock_key = {{table:semaphores}}.lock_key)",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:semaphores}} s"
     " WHERE changed_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p WHERE p.lock_key = s.lock_key)"
     " LIMIT {{param:limit}}) c",
     "SELECT s.lock_key FROM {{table:semaphores}} s"
     " WHERE s.changed_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:grace_ms}} * 1000 MICROSECOND"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p WHERE p.lock_key = s.lock_key)"
     " ORDER BY s.changed_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED"},
    // The history of holds (migration 0009): rows that ended more than the history retention
    // (retention_ms) ago, oldest first, walking the ended_at index. History rows are never
    // updated, so a batch waits only for another cleaner's.
    {"history",
     "DELETE FROM {{table:history}}"
     " WHERE ended_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:retention_ms}} * 1000 MICROSECOND"
     " ORDER BY ended_at LIMIT {{param:limit}}",
     "SELECT COUNT(*) AS n FROM (SELECT 1 FROM {{table:history}}"
     " WHERE ended_at <= UTC_TIMESTAMP(6) - INTERVAL {{param:retention_ms}} * 1000 MICROSECOND"
     " LIMIT {{param:limit}}) s"},
};

constexpr CleanerSql kCleaner = {
    .tables = kCleanedTables,
    // No params. NULL when no row has expired.
    .locks_oldest =
        "SELECT DATE_FORMAT(MIN(expires_at), '%Y-%m-%dT%H:%i:%s.%fZ') AS oldest"
        " FROM {{table:locks}} WHERE expires_at <= UTC_TIMESTAMP(6)",
};

constexpr RowLockSql kRowLock = {
    // Row locks. SELECT ... FOR UPDATE on a missing row takes a gap lock in InnoDB, so the key's
    // row is made to exist first: a plain (non-locking) read, and INSERT IGNORE only when the
    // row is missing (INSERT IGNORE on an existing row waits for a shared lock on it, which a
    // holder's FOR UPDATE blocks). Then, in the lease's transaction, the row is locked (NOWAIT
    // for a try; a bounded wait otherwise) and stamped with the holder and a fencing token,
    // GREATEST(previous + 1, clock in µs), returned through LAST_INSERT_ID().
    // Statements (sql/statement.hpp): key, host, process, thread (the holder), row_key (a row
    // of the caller's own table). exists: column "found" when the row exists.
    .exists = "SELECT 1 AS found FROM {{table:row_locks}} WHERE lock_key = {{param:key}}",
    // InnoDB's duplicate check waits for a transaction that locked the row meanwhile (a holder
    // that created and locked it after we looked); the wait is cut to InnoDB's shortest, one
    // second, and the strategy then lets the lock statement decide: through the session's
    // innodb_lock_wait_timeout, set around the statement (session_wait; SET_VAR cannot set it
    // there, not being hint-updatable). MariaDB sets it in the statement (mariadb.cpp).
    .create =
        "INSERT IGNORE INTO {{table:row_locks}} (lock_key, used_at)"
        " VALUES ({{param:key}}, UTC_TIMESTAMP(6))",
    .set_timeout = "",
    // innodb_lock_wait_timeout is not hint-updatable, so the session's value is set before a
    // bounded wait ({{seconds}}, whole seconds, at least 1) and reset to the server's default
    // after it, whatever its outcome. (MariaDB carries its waits in SET STATEMENT instead.)
    .session_wait = "SET SESSION innodb_lock_wait_timeout = {{seconds}}",
    .session_wait_reset = "SET SESSION innodb_lock_wait_timeout = DEFAULT",
    // One row when the row exists and is now locked by this transaction.
    .try_lock =
        "SELECT fencing_token FROM {{table:row_locks}} WHERE lock_key = {{param:key}}"
        " FOR UPDATE NOWAIT",
    // After session_wait; MAX_EXECUTION_TIME in ms ends the wait at the exact deadline (MariaDB
    // reads the hint as a comment; its bound is then session_wait's whole seconds).
    .wait =
        "SELECT /*+ MAX_EXECUTION_TIME({{ms}}) */"
        " fencing_token FROM {{table:row_locks}} WHERE lock_key = {{param:key}} FOR UPDATE",
    // LAST_INSERT_ID() = the new fencing token.
    .stamp =
        "UPDATE {{table:row_locks}} SET owner_host = {{param:host}},"
        " owner_process = {{param:process}}, owner_thread = {{param:thread}},"
        " used_at = UTC_TIMESTAMP(6), fencing_token = LAST_INSERT_ID(GREATEST(fencing_token + 1,"
        " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))"
        " WHERE lock_key = {{param:key}}",
    // One row when the row exists and is locked.
    .target_try =
        "SELECT 1 AS found FROM {{target}} WHERE {{column}} = {{param:row_key}} FOR UPDATE NOWAIT",
    .target_wait =
        "SELECT /*+ MAX_EXECUTION_TIME({{ms}}) */ 1 AS found FROM {{target}}"
        " WHERE {{column}} = {{param:row_key}}"
        " FOR UPDATE",
};

constexpr SessionLockSql kSessionLock = {
    // GET_LOCK names are server-wide (every database of the server shares them); the strategy
    // names a lock "dblock_" + 40 hex digits of SHA-256 over schema, prefix and key, within the
    // 64-character limit. GET_LOCK answers 1 when it took the lock, 0 when the wait ran out, NULL
    // on an error (a killed wait); only 1 takes a token. The fencing token is UUID_SHORT(), in
    // the same statement and without a table write: (server_id & 255) << 56, plus the server's
    // start time in seconds << 24, plus a counter incremented on each call. It increases
    // strictly within a server run, and across restarts while the server clock does not step
    // back and fewer than 2^24 calls per second of uptime were made. Global, not per key. It is
    // a BIGINT UNSIGNED: a server_id of 128 or more does not fit a signed token (the strategy
    // refuses it).
    .try_lock =
        "SELECT CASE WHEN GET_LOCK({{param:lock}}, 0) = 1 THEN UUID_SHORT() END AS fencing_token",
    // timeout: seconds (a double). MySQL 8.0 rounds it to whole seconds; the strategy sends it
    // whole seconds only (SessionLockSql::fractional_wait).
    .wait =
        "SELECT CASE WHEN GET_LOCK({{param:lock}}, {{param:timeout}}) = 1 THEN UUID_SHORT() END"
        " AS fencing_token",
    .fractional_wait = false,
    // 1 when this session held it; 0 when another session does; NULL when nobody does.
    .release = "SELECT RELEASE_LOCK({{param:lock}}) AS released",
    .unlock_all = "SELECT RELEASE_ALL_LOCKS()",
};

constexpr VersionSql kVersions = {
    // Optimistic versions. A version is the database clock in µs, raised past the previous
    // version (GREATEST(previous + 1, clock)): a row deleted and created again starts above every
    // version handed out before, so an old reader's compare-and-set can never match it (no ABA).
    // Statements: key (cas also the version read). Column "version". A consistent
    // (non-locking) read.
    .read = "SELECT version FROM {{table:versions}} WHERE lock_key = {{param:key}}",
    // Run in autocommit after read found no row (INSERT IGNORE on an existing
    // row would wait for a shared lock behind a committer).
    .create =
        "INSERT IGNORE INTO {{table:versions}} (lock_key, version, updated_at)"
        " VALUES ({{param:key}},"
        " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)),"
        " UTC_TIMESTAMP(6))",
    // One row matched when it still was that version;
    // LAST_INSERT_ID() = the new version. The UPDATE reads the latest committed row, not the
    // transaction's snapshot, so a version moved on by another commit does not match.
    .cas =
        "UPDATE {{table:versions}} SET updated_at = UTC_TIMESTAMP(6),"
        " version = LAST_INSERT_ID(GREATEST(version + 1,"
        " TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))"
        " WHERE lock_key = {{param:key}} AND version = {{param:version}}",
};

// The rows `dblock locks` lists, with their columns as list_locks() reads them: held now, finished
// but kept taken for their min_hold (hold_count 0), or expired but not yet cleaned.
#define DBLOCK_LISTED_ROWS                                                                   \
  "SELECT lock_key AS `key`, lease_id, owner_host, owner_process, owner_thread, hold_count," \
  " fencing_token, DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,"        \
  " IF(expires_at >= '9999-12-31', 'never',"                                                 \
  "   DATE_FORMAT(expires_at, '%Y-%m-%dT%H:%i:%s.%fZ')) AS expires_at,"                      \
  " IF(expires_at <= UTC_TIMESTAMP(6), 1, 0) AS expired, CAST(metadata AS CHAR) AS metadata" \
  " FROM {{table:locks}} WHERE (hold_count > 0 OR expires_at > UTC_TIMESTAMP(6))"

constexpr OperatorSql kOperators = {
    .list = DBLOCK_LISTED_ROWS " ORDER BY lock_key",
    // A Statement: prefix. list for the keys that start with it,
    // byte for byte (lock_key is VARBINARY, so LEFT counts bytes); % and _ are plain bytes.
    .list_prefix = DBLOCK_LISTED_ROWS
    " AND LEFT(lock_key, LENGTH(CAST({{param:prefix}} AS BINARY)))"
    "   = CAST({{param:prefix}} AS BINARY)"
    " ORDER BY lock_key",
    // A Statement: key. list for that key alone, found by the primary key.
    .row = DBLOCK_LISTED_ROWS " AND lock_key = {{param:key}}",
    // A Statement: key, lease_id, token (as an operator read them). An operator's release
    // (`dblock release`): frees the row as the last release does (hold_count 0, expires_at now;
    // also a row a release left taken for its min_hold), but only while it still carries the
    // lease the operator was shown. The fencing token stays, so the next holder's is higher;
    // the old holder's renewals and release then match nothing (the lease is lost). One
    // affected row when it freed the row. Ending a hold, it writes 'f-' before the lease id
    // (within the column's 64 characters), which tells the history (kHistory) an operator's
    // release from the holder's own; assignments run left to right, so lease_id reads hold_count
    // before it is set to 0.
    .release =
        "UPDATE {{table:locks}} SET"
        " lease_id = IF(hold_count > 0, CONCAT('f-', LEFT(lease_id, 62)), lease_id),"
        " hold_count = 0, expires_at = UTC_TIMESTAMP(6)"
        " WHERE lock_key = {{param:key}} AND lease_id = {{param:lease_id}}"
        " AND fencing_token = {{param:token}}"
        " AND (hold_count > 0 OR expires_at > UTC_TIMESTAMP(6))",
    .waiters =
        "SELECT lock_key AS `key`, COUNT(*) AS n FROM {{table:lock_waiters}}"
        " WHERE expires_at > UTC_TIMESTAMP(6) GROUP BY lock_key",
    // seq is the primary key: the join finds the head alone, by the (lock_key, seq) index.
    .waiter_queues =
        "SELECT q.lock_key AS `key`, q.n, w.owner_host AS head_host,"
        " w.owner_process AS head_process, w.owner_thread AS head_thread,"
        " DATE_FORMAT(w.registered_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS head_since"
        " FROM (SELECT lock_key, COUNT(*) AS n, MIN(seq) AS head_seq"
        "  FROM {{table:lock_waiters}} WHERE expires_at > UTC_TIMESTAMP(6)"
        "  AND LEFT(lock_key, LENGTH(CAST({{param:prefix}} AS BINARY)))"
        "   = CAST({{param:prefix}} AS BINARY)"
        "  GROUP BY lock_key) q"
        " JOIN {{table:lock_waiters}} w ON w.lock_key = q.lock_key AND w.seq = q.head_seq"
        " ORDER BY q.lock_key",
    .now = "SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ') AS now",
    .permits =
        "SELECT p.lock_key AS `key`, p.slot, s.permits, p.lease_id, p.owner_host, p.owner_process,"
        " p.owner_thread, CASE WHEN p.lease_id LIKE 'r-%' THEN 0 ELSE 1 END AS hold_count,"
        " p.fencing_token,"
        " DATE_FORMAT(p.acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,"
        " DATE_FORMAT(p.expires_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS expires_at,"
        " IF(p.expires_at <= UTC_TIMESTAMP(6), 1, 0) AS expired,"
        " CAST(p.metadata AS CHAR) AS metadata"
        " FROM {{table:semaphore_permits}} p"
        " LEFT JOIN {{table:semaphores}} s ON s.lock_key = p.lock_key"
        " WHERE (p.lease_id NOT LIKE 'r-%' OR p.expires_at > UTC_TIMESTAMP(6)) AND "
        "LEFT(p.lock_key, LENGTH(CAST({{param:prefix}} AS"
        "   BINARY))) = CAST({{param:prefix}} AS BINARY)"
        " ORDER BY p.lock_key, p.slot",
    // CLIENT_FOUND_ROWS: one row matched when freed.
    .release_permit =
        "UPDATE {{table:semaphore_permits}} SET"
        " lease_id = IF(lease_id LIKE 'r-%', lease_id, CONCAT('r-', lease_id)),"
        " expires_at = UTC_TIMESTAMP(6)"
        " WHERE lock_key = {{param:key}} AND slot = {{param:slot}}"
        " AND lease_id = {{param:lease_id}} AND fencing_token = {{param:token}}"
        " AND expires_at > UTC_TIMESTAMP(6)",
};

#undef DBLOCK_LISTED_ROWS

// The history of holds (HistorySql): an AFTER UPDATE and an AFTER DELETE row trigger on the lock
// table, which read what ended a tenure from the row's change as PostgreSQL's do (postgresql.cpp,
// kHistory): a tenure ends when a row with holds loses them (released, force_released for the
// operator's 'f-' mark, expired when it had expired before the statement) or gets a new token (a
// hand-over, or a takeover of an expired row: taken_over by another owner, expired by its own),
// or is deleted with holds left (cleaned). UTC_TIMESTAMP(6) in a trigger is its statement's
// clock. A trigger runs with its definer's rights (the role that enabled history), so the roles
// that lock need no privilege on the history table. Every statement a trigger runs clears the
// flag that makes the server put a LAST_INSERT_ID(expr) into the reply (the session keeps the
// value): the lock statements read such replies again (UniqueKeySql::reread_id). MySQL's DDL is
// not transactional: enable creates what is missing, one statement at a time, and an existing
// trigger is left as it is.
constexpr std::string_view kHistoryTriggers[] = {"locks_ended", "locks_cleaned"};

#define DBLOCK_HISTORY_INSERT                                                          \
  "INSERT INTO {{table:history}} (lock_key, fencing_token, owner_host, owner_process," \
  " owner_thread, acquired_at, ended_at, ended_how)"                                   \
  " VALUES (OLD.lock_key, OLD.fencing_token, OLD.owner_host, OLD.owner_process,"       \
  " OLD.owner_thread, OLD.acquired_at,"

constexpr HistoryStep kHistoryEnable[] = {
    {"locks_ended",
     "CREATE TRIGGER {{table:locks_ended}} AFTER UPDATE ON {{table:locks}} FOR EACH ROW"
     " IF OLD.hold_count > 0"
     "   AND (NEW.hold_count = 0 OR NEW.fencing_token <> OLD.fencing_token) "
     "THEN " DBLOCK_HISTORY_INSERT " LEAST(OLD.expires_at, UTC_TIMESTAMP(6)),"
     " CASE WHEN OLD.expires_at > UTC_TIMESTAMP(6) THEN"
     "     IF(NEW.lease_id = CONCAT('f-', LEFT(OLD.lease_id, 62)), 'force_released', 'released')"
     "   WHEN NEW.fencing_token <> OLD.fencing_token AND NOT (NEW.owner_host = OLD.owner_host"
     "     AND NEW.owner_process = OLD.owner_process AND NEW.owner_thread = OLD.owner_thread)"
     "     THEN 'taken_over'"
     "   ELSE 'expired' END);"
     " END IF"},
    {"locks_cleaned",
     "CREATE TRIGGER {{table:locks_cleaned}} AFTER DELETE ON {{table:locks}} FOR EACH ROW"
     " IF OLD.hold_count > 0 THEN " DBLOCK_HISTORY_INSERT " OLD.expires_at, 'cleaned'); END IF"},
};

#undef DBLOCK_HISTORY_INSERT

constexpr HistoryStep kHistoryDisable[] = {
    {"", "DROP TRIGGER IF EXISTS {{table:locks_ended}}"},
    {"", "DROP TRIGGER IF EXISTS {{table:locks_cleaned}}"},
};

constexpr HistorySql kHistory = {
    .unavailable = "",
    .triggers = kHistoryTriggers,
    .present =
        "SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS"
        " WHERE TRIGGER_SCHEMA = COALESCE({{param:schema}}, DATABASE())"
        " AND TRIGGER_NAME IN ({{param:first}}, {{param:second}})",
    .in_one_transaction = false,
    .enable = kHistoryEnable,
    .disable = kHistoryDisable,
    // The (lock_key, ended_at) index, walked backwards.
    .read =
        "SELECT lock_key AS `key`, fencing_token, owner_host, owner_process, owner_thread,"
        " DATE_FORMAT(acquired_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acquired_at,"
        " DATE_FORMAT(ended_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS ended_at, ended_how"
        " FROM {{table:history}} WHERE lock_key = {{param:key}}"
        " AND ({{param:since_ms}} IS NULL"
        "   OR ended_at >= UTC_TIMESTAMP(6) - INTERVAL {{param:since_ms}} * 1000 MICROSECOND)"
        " ORDER BY ended_at DESC, id DESC LIMIT {{param:limit}}",
};

constexpr DoctorSql kDoctor = {
    // `dblock doctor`. Columns "version" and "flavour".
    .server =
        "SELECT VERSION() AS version,"
        " IF(VERSION() LIKE '%MariaDB%', 'MariaDB', 'MySQL') AS flavour",
    // Column "state": empty on a writable server, else "read_only" (a replica, usually).
    .writable = "SELECT IF(@@global.read_only, 'read_only', '') AS state",
    // Rows of Variable_name, Value: a Galera node's cluster state, the replicas connected
    // (MariaDB only), and whether semi-synchronous replication is on (source side; MySQL 8.0.26
    // renamed the variable). Names absent from this server give no row.
    .replication =
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_cluster_status',"
        " 'wsrep_ready', 'Slaves_connected', 'Rpl_semi_sync_master_status',"
        " 'Rpl_semi_sync_source_status')",
    .time_zone =
        "SELECT IF(@@time_zone = 'SYSTEM', CONCAT('SYSTEM (', @@system_time_zone, ')'),"
        " @@time_zone) AS zone",
    .clock = "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS us",
    .probe_select = "SELECT {{column}} FROM {{target}} WHERE 1 = 0",
    .probe_insert = "INSERT INTO {{target}} SELECT * FROM {{target}} WHERE 1 = 0",
    .probe_update = "UPDATE {{target}} SET {{column}} = {{column}} WHERE 1 = 0",
    .probe_delete = "DELETE FROM {{target}} WHERE 1 = 0",
    // On a table that exists: CREATE ... IF NOT EXISTS only notes that it does, an ALTER TABLE
    // without changes changes nothing; the server checks the privilege first.
    .probe_create = "CREATE TABLE IF NOT EXISTS {{target}} (probe INT)",
    .probe_alter = "ALTER TABLE {{target}}",
    .sequence_usage = "",
    .identity = "SELECT CURRENT_USER() AS user_name, DATABASE() AS schema_name",
    .schema_privileges = "",
    .owner = "",
};

constexpr ServerSql kMySQL = {
    .migrator = kMigrator,
    .session = kSession,
    .unique_key = kUniqueKey,
    .semaphore = kSemaphore,
    .cleaner = kCleaner,
    .row_lock = kRowLock,
    .session_lock = kSessionLock,
    .versions = kVersions,
    .operators = kOperators,
    .history = kHistory,
    .doctor = kDoctor,
};

}  // namespace

const ServerSql& mysql_sql() { return kMySQL; }

}  // namespace dblock::detail
