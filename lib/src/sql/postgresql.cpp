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

    // Times come from statement_timestamp(): the server's clock when the statement started,
    // one value for the whole statement (clock_timestamp() is read anew by every expression,
    // so two CASEs of one statement could disagree about whether a row had expired). Lock
    // statements run in autocommit, so this is never an old transaction's start time.
    // A row is free when expires_at has passed: release sets hold_count = 0 and expires_at to
    // now, so "expires_at <= now" covers free, expired and released rows alike. Rows are freed,
    // never deleted, by release; only the cleaner deletes (rows long past expiry).
    //
    // Fencing tokens: the database clock in microseconds, raised past the row's previous
    // token: GREATEST(previous + 1, clock). Strictly increasing per key while the row exists,
    // and for a row recreated after the cleaner deleted it, as long as the server clock does
    // not step back by more than the cleaner's grace period.
    .lock_results_in_rows = true,
    // $1 key, $2 lease_id (this attempt's; a retry reuses it), $3 host, $4 process, $5 thread,
    // $6 ttl in ms, $7 metadata JSON or NULL.
    // Takes a free/expired row, re-enters our own (hold_count + 1, same token), or recognises a
    // retry of an attempt that already succeeded (same lease_id: nothing changes). Returns no
    // row when another owner holds the key. The NOT EXISTS pre-check makes a busy try read-only;
    // ON CONFLICT ... WHERE decides races between concurrent inserts.
    .lock_acquire =
        "INSERT INTO {{table:locks}} AS l (lock_key, lease_id, owner_host, owner_process,"
        " owner_thread, hold_count, fencing_token, acquired_at, expires_at, metadata)"
        " SELECT $1::text, $2::text, $3::text, $4::text, $5::text, 1,"
        " (extract(epoch FROM statement_timestamp()) * 1000000)::bigint,"
        " statement_timestamp(), statement_timestamp() + $6::bigint * interval '1 millisecond', "
        "$7::jsonb"
        // A busy try stops here, as a read: no transaction id, no WAL flush, no row lock.
        " WHERE NOT EXISTS (SELECT 1 FROM {{table:locks}} b WHERE b.lock_key = $1"
        "   AND b.expires_at > statement_timestamp() AND NOT (b.owner_host = $3"
        "   AND b.owner_process = $4 AND b.owner_thread = $5))"
        " ON CONFLICT (lock_key) DO UPDATE SET"
        " hold_count = CASE WHEN l.expires_at <= statement_timestamp() THEN 1"
        "   WHEN l.lease_id = EXCLUDED.lease_id THEN l.hold_count ELSE l.hold_count + 1 END,"
        " fencing_token = CASE WHEN l.expires_at <= statement_timestamp()"
        "   THEN GREATEST(l.fencing_token + 1, EXCLUDED.fencing_token) ELSE l.fencing_token END,"
        " acquired_at = CASE WHEN l.expires_at <= statement_timestamp() THEN EXCLUDED.acquired_at"
        "   ELSE l.acquired_at END,"
        " metadata = CASE WHEN l.expires_at <= statement_timestamp() THEN EXCLUDED.metadata"
        "   ELSE l.metadata END,"
        " expires_at = GREATEST(CASE WHEN l.expires_at <= statement_timestamp() THEN NULL"
        "   ELSE l.expires_at END, EXCLUDED.expires_at),"
        " lease_id = EXCLUDED.lease_id, owner_host = EXCLUDED.owner_host,"
        " owner_process = EXCLUDED.owner_process, owner_thread = EXCLUDED.owner_thread"
        " WHERE l.expires_at <= statement_timestamp()"
        "   OR (l.owner_host = EXCLUDED.owner_host AND l.owner_process = EXCLUDED.owner_process"
        "       AND l.owner_thread = EXCLUDED.owner_thread)"
        " RETURNING fencing_token, hold_count",
    // $1 key, $2 host, $3 process, $4 thread, $5 fencing token, $6 notification channel,
    // $7 release id (random per release call; a retry after a lost reply reuses it).
    // Owner- and token-checked; a lease that expired is lost and changes nothing. The last
    // release frees the row and NOTIFYs waiters (delivered at commit). Returns the remaining
    // hold_count, or no row when the lease was not held.
    // Idempotent under retry: the release id is written into lease_id, and a row that already
    // carries it was released by this very call, so the retry changes nothing and reports the
    // count left by the first attempt (a decrement applied twice would drop an outer hold).
    .lock_release =
        "WITH r AS (UPDATE {{table:locks}} SET"
        " hold_count = CASE WHEN lease_id = $7 THEN hold_count ELSE hold_count - 1 END,"
        " expires_at = CASE WHEN lease_id <> $7 AND hold_count = 1 THEN statement_timestamp()"
        "   ELSE expires_at END,"
        " lease_id = $7"
        " WHERE lock_key = $1 AND owner_host = $2 AND owner_process = $3 AND owner_thread = $4"
        " AND fencing_token = $5 AND (lease_id = $7"
        "   OR (hold_count > 0 AND expires_at > statement_timestamp()))"
        " RETURNING lock_key, hold_count)"
        " SELECT hold_count,"
        " CASE WHEN hold_count = 0 THEN pg_notify($6, lock_key)::text END AS notified"
        " FROM r",
    // Params as lock_release. Run right after a release that left holds behind although this
    // process holds no other lease of the owner on the key: those holds belong to acquires whose
    // reply never came (the caller got an error and no lease), and would otherwise keep the key
    // for as long as the owner keeps re-entering it. Frees the row only if it still carries the
    // release id that release just wrote (nothing happened to it since), and NOTIFYs waiters.
    .lock_release_rest =
        "WITH r AS (UPDATE {{table:locks}} SET hold_count = 0, expires_at = statement_timestamp()"
        " WHERE lock_key = $1 AND owner_host = $2 AND owner_process = $3 AND owner_thread = $4"
        " AND fencing_token = $5 AND lease_id = $7 AND hold_count > 0"
        " AND expires_at > statement_timestamp()"
        " RETURNING lock_key)"
        " SELECT pg_notify($6, lock_key)::text AS notified FROM r",
    // $1 ttl in ms, $2 key, $3 host, $4 process, $5 thread, $6 fencing token (the MySQL order).
    // One row matched when the lease is still held.
    .lock_renew =
        "UPDATE {{table:locks}}"
        " SET expires_at = statement_timestamp() + $1::bigint * interval '1 millisecond'"
        " WHERE lock_key = $2 AND owner_host = $3 AND owner_process = $4 AND owner_thread = $5"
        " AND fencing_token = $6 AND hold_count > 0 AND expires_at > statement_timestamp()",
    // $1 key, $2 claim id, $3 host, $4 process, $5 thread, $6 metadata JSON or NULL.
    // A claim never expires. Succeeds for a new or free key, or for a retry with the same claim
    // id; returns no row when the key is already claimed or held.
    .lock_claim =
        "INSERT INTO {{table:locks}} AS l (lock_key, lease_id, owner_host, owner_process,"
        " owner_thread, hold_count, fencing_token, acquired_at, expires_at, metadata)"
        " VALUES ($1, $2, $3, $4, $5, 1,"
        " (extract(epoch FROM statement_timestamp()) * 1000000)::bigint,"
        " statement_timestamp(), 'infinity', $6::jsonb)"
        " ON CONFLICT (lock_key) DO UPDATE SET"
        " fencing_token = CASE WHEN l.lease_id = EXCLUDED.lease_id THEN l.fencing_token"
        "   ELSE GREATEST(l.fencing_token + 1, EXCLUDED.fencing_token) END,"
        " lease_id = EXCLUDED.lease_id, owner_host = EXCLUDED.owner_host,"
        " owner_process = EXCLUDED.owner_process, owner_thread = EXCLUDED.owner_thread,"
        " hold_count = 1, acquired_at = CASE WHEN l.lease_id = EXCLUDED.lease_id"
        "   THEN l.acquired_at ELSE EXCLUDED.acquired_at END,"
        " expires_at = 'infinity', metadata = EXCLUDED.metadata"
        " WHERE l.expires_at <= statement_timestamp() OR l.lease_id = EXCLUDED.lease_id"
        " RETURNING fencing_token",
    // Rows held now or expired but not yet cleaned (free rows are left out).
    .lock_list =
        "SELECT lock_key AS key, lease_id, owner_host, owner_process, owner_thread, hold_count,"
        " fencing_token,"
        " to_char(acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "
        "acquired_at,"
        " CASE WHEN expires_at = 'infinity' THEN 'never' ELSE"
        " to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') END"
        " AS expires_at,"
        " CASE WHEN expires_at <= clock_timestamp() THEN 1 ELSE 0 END AS expired,"
        " metadata::text AS metadata"
        " FROM {{table:locks}} WHERE hold_count > 0 ORDER BY lock_key",

    // The cleaner. $1 grace in ms, $2 batch size. Deletes at most $2 rows whose expires_at lies
    // more than the grace in the past, oldest first. The cut-off is computed once (an InitPlan),
    // so the inner SELECT is a range scan of the expires_at index, and = ANY(ARRAY(...)) makes
    // the DELETE look rows up by primary key (IN (...) plans a sequential scan of the table).
    // SKIP LOCKED leaves rows another session is changing (a renewal, an acquire, another
    // cleaner) alone, so two cleaners never wait on or count the same row; the outer WHERE
    // re-checks expiry on the row version the DELETE sees, so a row renewed after the inner
    // SELECT survives. Claims ('infinity') never qualify.
    .clean_delete =
        "DELETE FROM {{table:locks}} WHERE lock_key = ANY(ARRAY("
        " SELECT lock_key FROM {{table:locks}}"
        " WHERE expires_at <= (SELECT clock_timestamp() - $1::bigint * interval '1 millisecond')"
        " ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))"
        " AND expires_at <= clock_timestamp() - $1::bigint * interval '1 millisecond'",
    // $1 grace in ms, $2 the most rows to count. A read: changes nothing.
    .clean_count =
        "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:locks}}"
        " WHERE expires_at <= (SELECT clock_timestamp() - $1::bigint * interval '1 millisecond')"
        " LIMIT $2) s",
    // No params. NULL when no row has expired.
    .clean_oldest =
        "SELECT to_char(min(expires_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        " AS oldest FROM {{table:locks}} WHERE expires_at <= clock_timestamp()",
};

}  // namespace

const DialectSql& postgresql_sql() { return kPostgreSQL; }

}  // namespace dblock::detail
