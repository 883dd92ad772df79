// SPDX-License-Identifier: Apache-2.0
// All of dblock's SQL for PostgreSQL (12+).
#include "sql/server_sql.hpp"

namespace dblock::detail {

namespace {

// Relaxed durability (UniqueKeyLockOptions::relaxed_durability): {{relaxed:...}} in the acquire,
// release(_rest) and renew statements adds set_config('synchronous_commit', 'off', true), which
// switches off synchronous_commit for the statement's own implicit transaction only (is_local =
// true lasts until that transaction's commit, which is when the setting is read), so the commit
// returns before its WAL reaches the disk. Placed as the first AND of the WHERE that decides
// whether a row is written: whenever the statement writes, the call has run (a qual that fails
// first means no row, no write, nothing to flush). The session's own setting is untouched, which
// matters on a connection borrowed from a service. Costs no extra round trip.
constexpr MigratorSql kMigrator = {
    .create_schema = "CREATE SCHEMA IF NOT EXISTS {{schema}}",
    // Transaction-scoped: released by COMMIT/ROLLBACK, and works through transaction poolers.
    .lock = "SELECT pg_advisory_xact_lock({{param:lock}}::bigint) IS NULL AS got",
    .unlock = "",
    .in_one_transaction = true,
    // Read committed whatever default_transaction_isolation says: every statement after the
    // lock wait must see what the migrator that held the lock committed. Under repeatable read
    // or serializable the snapshot is taken by the transaction's first query, the lock itself,
    // before it waits, so the migrations table would look as it did before the other migrator
    // ran and its migrations would be applied a second time (a duplicate key on the migrations
    // table, or a DDL error). SET TRANSACTION is allowed only before the first query.
    .isolation = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
    // param: the qualified, quoted table name
    .table_exists =
        "SELECT CASE WHEN to_regclass({{param:qualified}}) IS NULL THEN 0 ELSE 1 END AS present",
    .create_table =
        "CREATE TABLE IF NOT EXISTS {{table:schema_migrations}} ("
        " version integer PRIMARY KEY,"
        " name text NOT NULL,"
        " checksum char(64) NOT NULL,"
        " applied_at timestamptz NOT NULL)",
    .select =
        "SELECT version, name, checksum,"
        " to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS applied_at"
        " FROM {{table:schema_migrations}} ORDER BY version",
    .insert =
        "INSERT INTO {{table:schema_migrations}} (version, name, checksum, applied_at)"
        " VALUES ({{param:version}}, {{param:name}}, {{param:checksum}}, clock_timestamp())",
    // The advisory lock above is cluster-wide wherever PostgreSQL accepts DDL.
    .cluster_lock = "",
    .cluster_unlock = "",
    .cluster_lock_stale = "",
};

constexpr SessionSql kSession = {
    // The level is the last column.
    .isolation = "SELECT current_setting('default_transaction_isolation') AS level",
    .galera_check = "",
    .galera_sync_wait = "",
    // For the session only (is_local false: past the transaction); ignored by the server on a
    // Unix-domain socket.
    .server_keepalive =
        "SELECT set_config('tcp_keepalives_idle', $1, false),"
        " set_config('tcp_keepalives_interval', $2, false),"
        " set_config('tcp_keepalives_count', $3, false),"
        " set_config('tcp_user_timeout', $4, false)",
};

// The statements that free a key notify the lock table's channel with the first live waiter
// of the key's fair queue (lock_waiters), a newline, and the key: "head\nkey", head empty when
// no one is queued or the release is not a fair lock's. Each listening process wakes that waiter
// if it is one of its own, and else (no head) one of its waiters of the key. A waiter id holds
// no newline; a key may, so the head comes first. A CTE "h" with one row, column "head", for
// the key in {{param:key}}; only in {{fair}} sections, so that a lock that is not fair never
// reads lock_waiters (and works on tables migrated before it existed).
#define DBLOCK_QUEUE_HEAD                                                      \
  "h AS (SELECT COALESCE((SELECT w.waiter_id FROM {{table:lock_waiters}} w"    \
  " WHERE w.lock_key = {{param:key}} AND w.expires_at > statement_timestamp()" \
  " ORDER BY w.seq LIMIT 1), '') AS head)"

// A fair waiter's place written again (a refresh, or a resend after a lost reply): it keeps its
// place (seq) and takes the newer expiry, lease and refresh times.
#define DBLOCK_PLACE_REFRESH                                               \
  "expires_at = EXCLUDED.expires_at, ttl_ms = EXCLUDED.ttl_ms,"            \
  " lock_delay_ms = EXCLUDED.lock_delay_ms, metadata = EXCLUDED.metadata," \
  " refreshed_at = EXCLUDED.refreshed_at, sent_us = EXCLUDED.sent_us"

constexpr UniqueKeySql kUniqueKey = {
    // Times come from statement_timestamp(): the server's clock when the statement started,
    // one value for the whole statement (clock_timestamp() is read anew by every expression,
    // so two CASEs of one statement could disagree about whether a row had expired). Lock
    // statements run in autocommit, so this is never an old transaction's start time.
    // A row is free when expires_at has passed: release sets hold_count = 0 and expires_at to
    // now, so "expires_at <= now" covers free, expired and released rows alike. Rows are freed,
    // never deleted, by release; only the cleaner deletes (rows long past expiry).
    // Lock-delay: a holder's expiry is now + ttl_ms + lock_delay_ms; its own hold is live while
    // expires_at > now + lock_delay_ms (see UniqueKeySql in server_sql.hpp).
    //
    // Fencing tokens: the database clock in microseconds, raised past the row's previous
    // token: GREATEST(previous + 1, clock). Strictly increasing per key while the row exists,
    // and for a row recreated after the cleaner deleted it, as long as the server clock does
    // not step back by more than the cleaner's grace period.
    .results_in_rows = true,
    .reread_id = "",
    .release_count_plus_one = false,
    // A Statement (sql/statement.hpp): key, lease_id (this attempt's; a retry reuses it), host,
    // process, thread, ttl_ms, metadata (JSON or NULL); fair: seq and waiter_id (see
    // UniqueKeySql).
    // Takes a free/expired row, re-enters our own (hold_count + 1, same token), or recognises a
    // retry of an attempt that already succeeded (same lease_id: nothing changes). Returns no
    // row when another owner holds the key. The NOT EXISTS pre-check makes a busy try read-only;
    // ON CONFLICT ... WHERE decides races between concurrent inserts.
    .acquire =
        "{{fair}}WITH a AS ({{/fair}}INSERT INTO {{table:locks}} AS l (lock_key, lease_id,"
        " owner_host, owner_process, owner_thread, hold_count, fencing_token, acquired_at, "
        "expires_at, metadata)"
        " SELECT {{param:key}}::text, {{param:lease_id}}::text, {{param:host}}::text,"
        " {{param:process}}::text, {{param:thread}}::text, 1,"
        " (extract(epoch FROM statement_timestamp()) * 1000000)::bigint,"
        " statement_timestamp(),"
        " statement_timestamp()"
        "   + ({{param:ttl_ms}}::bigint + {{param:lock_delay_ms}}::bigint)"
        "     * interval '1 millisecond',"
        " {{param:metadata}}::jsonb"
        // A busy try stops here, as a read: no transaction id, no WAL flush, no row lock. The
        // owner re-enters only a hold whose TTL has not run out: one lapsed into its lock-delay
        // stays taken, by no one (re-entered, it would hand its token to a new tenure).
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " NOT EXISTS (SELECT 1 FROM {{table:locks}} b WHERE b.lock_key = {{param:key}}"
        "   AND b.expires_at > statement_timestamp() AND NOT (b.owner_host = {{param:host}}"
        "   AND b.owner_process = {{param:process}} AND b.owner_thread = {{param:thread}}"
        "   AND b.hold_count > 0 AND b.expires_at > statement_timestamp()"
        "     + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'))"
        // Fair: a free key goes to the first live waiter; the owner's re-entry needs no turn.
        "{{fair}} AND (NOT EXISTS (SELECT 1 FROM {{table:lock_waiters}} w"
        "     WHERE w.lock_key = {{param:key}} AND w.expires_at > statement_timestamp()"
        "     AND w.seq < COALESCE({{param:seq}}::bigint, 9223372036854775807)"
        "     AND w.waiter_id <> COALESCE({{param:waiter_id}}::text, ''))"
        "   OR EXISTS (SELECT 1 FROM {{table:locks}} m WHERE m.lock_key = {{param:key}}"
        "     AND m.expires_at > statement_timestamp()"
        "       + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'"
        "     AND m.owner_host = {{param:host}}"
        "     AND m.owner_process = {{param:process}} AND m.owner_thread = {{param:thread}}"
        "     AND m.hold_count > 0)){{/fair}}"
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
        " previous_lease_id = CASE WHEN l.expires_at <= statement_timestamp() THEN l.lease_id"
        "   ELSE l.previous_lease_id END,"
        " lease_id = EXCLUDED.lease_id, owner_host = EXCLUDED.owner_host,"
        " owner_process = EXCLUDED.owner_process, owner_thread = EXCLUDED.owner_thread"
        " WHERE l.expires_at <= statement_timestamp()"
        "   OR (l.owner_host = EXCLUDED.owner_host AND l.owner_process = EXCLUDED.owner_process"
        "       AND l.owner_thread = EXCLUDED.owner_thread AND l.hold_count > 0"
        "       AND l.expires_at > statement_timestamp()"
        "         + {{param:lock_delay_ms}}::bigint * interval '1 millisecond')"
        " RETURNING fencing_token, hold_count"
        // A fair waiter that got the key leaves the queue in the same statement.
        "{{fair}}), d AS (DELETE FROM {{table:lock_waiters}}"
        "   WHERE {{param:waiter_id}}::text IS NOT NULL AND waiter_id = {{param:waiter_id}}"
        "   AND EXISTS (SELECT 1 FROM a))"
        // Refused, a waiter that asks to join takes its place in the same statement (as enqueue
        // does). Only then the commit skips its WAL flush (synchronous_commit off for this
        // transaction): a place is not worth a flush, and a place lost in a server crash is
        // taken again by the waiter's next refresh. CASE, not AND, so that set_config runs only
        // when no lock row was written: an acquire that got the key commits durably.
        // The place carries the lease a release may grant (see release).
        ", q AS (INSERT INTO {{table:lock_waiters}} AS w (waiter_id, lock_key, owner_host,"
        " owner_process, owner_thread, registered_at, expires_at, ttl_ms, lock_delay_ms,"
        " metadata, refreshed_at, sent_us)"
        " SELECT {{param:waiter_id}}::text, {{param:key}}::text, {{param:host}}::text,"
        " {{param:process}}::text, {{param:thread}}::text, statement_timestamp(),"
        " statement_timestamp() + {{param:join_ttl_ms}}::bigint * interval '1 millisecond',"
        " {{param:ttl_ms}}::bigint, {{param:lock_delay_ms}}::bigint, {{param:metadata}}::jsonb,"
        " statement_timestamp(), {{param:sent_us}}::bigint"
        " WHERE CASE WHEN {{param:join_ttl_ms}}::bigint IS NULL OR EXISTS (SELECT 1 FROM a)"
        "   THEN false ELSE set_config('synchronous_commit', 'off', true) IS NOT NULL END"
        " ON CONFLICT (waiter_id) DO UPDATE SET " DBLOCK_PLACE_REFRESH
        " RETURNING seq)"
        " SELECT fencing_token, hold_count, NULL::bigint AS seq FROM a"
        " UNION ALL SELECT NULL, NULL, seq FROM q{{/fair}}",
    .acquire_leaves_queue = true,
    .acquire_joins_queue = true,
    // A Statement (sql/statement.hpp): key, host, process, thread, token, channel (for NOTIFY),
    // release_id (random per release call; a retry after a lost reply reuses it).
    // Owner- and token-checked; a lease that expired is lost and changes nothing. The last
    // release frees the row and NOTIFYs waiters (delivered at commit; see DBLOCK_QUEUE_HEAD).
    // Returns the remaining hold_count (and, fair, the queue's head: "head"), or no row when the
    // lease was not held.
    // Idempotent under retry: the release id is written into lease_id, and a row that already
    // carries it was released by this very call, so the retry changes nothing and reports the
    // count left by the first attempt (a decrement applied twice would drop an outer hold). A
    // row another owner took since carries the release id in previous_lease_id (migration 0007):
    // the retry changes nothing there either, and reports the key freed (hold_count 0, no
    // notification: the key is held again).
    //
    // Fair: a release that would free the key grants it instead, in the same statement, to the
    // queue's head when the head's place carries a lease (refreshed_at, sent_us: migration 0011)
    // and looks alive (refreshed within the first half of its place's TTL): g moves the row to
    // the head (a new token, the head's owner, its place id as lease id, its metadata, expiry
    // refreshed_at + TTL + lock-delay: the lease runs from the head's last refresh, whose time
    // on its own clock, sent_us, the notification hands back), gd takes its place, and the
    // NOTIFY payload "head token sent_us\nkey" tells its process. Only when at least half of
    // that lease is left; else the head is woken and acquires as before. previous_lease_id takes
    // the release id, so a retry of this release recognises it (as after a takeover). r, the
    // plain release, runs when g did not.
    .release =
        "WITH {{fair}}g AS (UPDATE {{table:locks}} l SET"
        " fencing_token = GREATEST(l.fencing_token + 1,"
        "   (extract(epoch FROM statement_timestamp()) * 1000000)::bigint),"
        " acquired_at = statement_timestamp(),"
        " expires_at = w.refreshed_at + (w.ttl_ms + w.lock_delay_ms) * interval '1 millisecond',"
        " metadata = w.metadata, hold_count = 1, lease_id = w.waiter_id,"
        " previous_lease_id = {{param:release_id}}, owner_host = w.owner_host,"
        " owner_process = w.owner_process, owner_thread = w.owner_thread"
        " FROM (SELECT q.waiter_id, q.owner_host, q.owner_process, q.owner_thread, q.ttl_ms,"
        "   q.lock_delay_ms, q.metadata, q.refreshed_at, q.sent_us, q.expires_at"
        "   FROM {{table:lock_waiters}} q WHERE q.lock_key = {{param:key}}"
        "   AND q.expires_at > statement_timestamp() AND NOT (q.owner_host = {{param:host}}"
        "   AND q.owner_process = {{param:process}} AND q.owner_thread = {{param:thread}})"
        "   ORDER BY q.seq LIMIT 1) w"
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " l.lock_key = {{param:key}} AND l.owner_host = {{param:host}}"
        " AND l.owner_process = {{param:process}} AND l.owner_thread = {{param:thread}}"
        " AND l.fencing_token = {{param:token}} AND l.hold_count = 1"
        " AND l.lease_id <> {{param:release_id}}"
        " AND l.previous_lease_id IS DISTINCT FROM {{param:release_id}}"
        " AND l.expires_at > statement_timestamp()"
        "   + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'"
        " AND l.acquired_at + {{param:min_hold_ms}}::bigint * interval '1 millisecond'"
        "   <= statement_timestamp()"
        " AND w.sent_us IS NOT NULL AND w.refreshed_at IS NOT NULL AND w.ttl_ms IS NOT NULL"
        " AND w.lock_delay_ms IS NOT NULL"
        " AND w.expires_at - w.refreshed_at > 2 * (statement_timestamp() - w.refreshed_at)"
        " AND w.refreshed_at + w.ttl_ms * interval '0.5 millisecond' > statement_timestamp()"
        " RETURNING l.lock_key, l.fencing_token, w.waiter_id, w.sent_us),"
        " gd AS (DELETE FROM {{table:lock_waiters}} WHERE waiter_id = (SELECT waiter_id FROM g)),"
        " {{/fair}}r AS (UPDATE {{table:locks}} SET"
        " hold_count = CASE WHEN lease_id = {{param:release_id}}"
        "   OR previous_lease_id = {{param:release_id}} THEN hold_count ELSE hold_count - 1 END,"
        " expires_at = CASE WHEN lease_id <> {{param:release_id}} AND hold_count = 1"
        "   AND previous_lease_id IS DISTINCT FROM {{param:release_id}}"
        "   THEN GREATEST(statement_timestamp(),"
        "     acquired_at + {{param:min_hold_ms}}::bigint * interval '1 millisecond')"
        "   ELSE expires_at END,"
        " lease_id = CASE WHEN previous_lease_id = {{param:release_id}} THEN lease_id"
        "   ELSE {{param:release_id}} END"
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " lock_key = {{param:key}} AND ((owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND (lease_id = {{param:release_id}}"
        "   OR (hold_count > 0 AND expires_at > statement_timestamp()"
        "     + {{param:lock_delay_ms}}::bigint * interval '1 millisecond')))"
        "   OR previous_lease_id = {{param:release_id}}){{fair}} AND NOT EXISTS (SELECT 1 FROM g)"
        "{{/fair}}"
        " RETURNING lock_key, expires_at, CASE WHEN previous_lease_id = {{param:release_id}}"
        "   THEN -1 ELSE hold_count END AS hold_count){{fair}}, " DBLOCK_QUEUE_HEAD
        "{{/fair}}"
        " SELECT GREATEST(r.hold_count, 0) AS hold_count, {{fair}}h.head, {{/fair}}"
        " CASE WHEN r.hold_count = 0 AND r.expires_at <= statement_timestamp() THEN"
        "   pg_notify({{param:channel}}, {{fair}}h.head || {{/fair}}chr(10) || r.lock_key)::text"
        " END AS notified{{fair}}, NULL::bigint AS granted, NULL::bigint AS sent_us{{/fair}}"
        " FROM r{{fair}}, h"
        " UNION ALL SELECT 0, g.waiter_id::text, pg_notify({{param:channel}}, g.waiter_id || ' '"
        "   || g.fencing_token || ' ' || g.sent_us || chr(10) || g.lock_key)::text,"
        "   g.fencing_token, g.sent_us FROM g{{/fair}}",
    // Parameters as release. Run right after a release that left holds behind although this
    // process holds no other lease of the owner on the key: those holds belong to acquires whose
    // reply never came (the caller got an error and no lease), and would otherwise keep the key
    // for as long as the owner keeps re-entering it. Frees the row only if it still carries the
    // release id that release just wrote (nothing happened to it since), and NOTIFYs waiters.
    .release_rest =
        "WITH r AS (UPDATE {{table:locks}} SET hold_count = 0, expires_at = GREATEST("
        " statement_timestamp(), acquired_at + {{param:min_hold_ms}}::bigint * interval '1 "
        "millisecond')"
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " lock_key = {{param:key}} AND owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND lease_id = {{param:release_id}}"
        " AND hold_count > 0"
        " AND expires_at > statement_timestamp()"
        "   + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'"
        " RETURNING lock_key, expires_at){{fair}}, " DBLOCK_QUEUE_HEAD
        "{{/fair}}"
        " SELECT pg_notify({{param:channel}}, {{fair}}h.head || {{/fair}}chr(10) || r.lock_key)"
        "::text AS notified FROM r{{fair}}, h{{/fair}}"
        " WHERE r.expires_at <= statement_timestamp()",
    // A Statement: see UniqueKeySql::hand_over. The SET expressions read the row as it was, so
    // a row that already carries the waiter's lease id (this statement's own earlier attempt)
    // keeps its token and times. Fair: only to the queue's first live waiter, whose place the
    // statement deletes (as an acquire that gets the key does).
    .hand_over =
        "{{fair}}WITH u AS ({{/fair}}UPDATE {{table:locks}} SET"
        " fencing_token = CASE WHEN lease_id = {{param:to_lease_id}} THEN fencing_token"
        "   ELSE GREATEST(fencing_token + 1,"
        "     (extract(epoch FROM statement_timestamp()) * 1000000)::bigint) END,"
        " acquired_at = CASE WHEN lease_id = {{param:to_lease_id}} THEN acquired_at"
        "   ELSE statement_timestamp() END,"
        " expires_at = CASE WHEN lease_id = {{param:to_lease_id}} THEN expires_at"
        "   ELSE statement_timestamp() + ({{param:ttl_ms}}::bigint"
        "     + {{param:to_lock_delay_ms}}::bigint) * interval '1 millisecond' END,"
        " metadata = CASE WHEN lease_id = {{param:to_lease_id}} THEN metadata"
        "   ELSE {{param:metadata}}::jsonb END,"
        " hold_count = 1, lease_id = {{param:to_lease_id}}, owner_host = {{param:to_host}},"
        " owner_process = {{param:to_process}}, owner_thread = {{param:to_thread}}"
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " lock_key = {{param:key}} AND hold_count > 0 AND expires_at > statement_timestamp()"
        " AND ((owner_host = {{param:host}} AND owner_process = {{param:process}}"
        "     AND owner_thread = {{param:thread}} AND fencing_token = {{param:token}}"
        "     AND (hold_count = 1 OR {{param:any_holds}}::bigint = 1)"
        "     AND expires_at > statement_timestamp()"
        "       + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'"
        "{{fair}}     AND (SELECT w.waiter_id FROM {{table:lock_waiters}} w"
        "       WHERE w.lock_key = {{param:key}} AND w.expires_at > statement_timestamp()"
        "       ORDER BY w.seq LIMIT 1) = {{param:to_waiter_id}}::text{{/fair}})"
        "   OR (lease_id = {{param:to_lease_id}} AND owner_host = {{param:to_host}}"
        "     AND owner_process = {{param:to_process}} AND owner_thread = {{param:to_thread}}))"
        " RETURNING fencing_token"
        "{{fair}}), d AS (DELETE FROM {{table:lock_waiters}}"
        "   WHERE waiter_id = {{param:to_waiter_id}} AND EXISTS (SELECT 1 FROM u))"
        " SELECT fencing_token FROM u{{/fair}}",
    // A Statement: ttl_ms, key, host, process, thread, token. One row matched when the lease is
    // still held. Never moves expires_at earlier: the row is shared by every reentrant hold of the
    // owner, and another of them (acquired or renewed with a longer TTL) relies on the later
    // expiry.
    .renew =
        "UPDATE {{table:locks}}"
        " SET expires_at = GREATEST(expires_at, statement_timestamp()"
        "   + ({{param:ttl_ms}}::bigint + {{param:lock_delay_ms}}::bigint)"
        "     * interval '1 millisecond')"
        " WHERE {{relaxed:set_config('synchronous_commit', 'off', true) IS NOT NULL AND}}"
        " lock_key = {{param:key}} AND owner_host = {{param:host}}"
        " AND owner_process = {{param:process}} AND owner_thread = {{param:thread}}"
        " AND fencing_token = {{param:token}} AND hold_count > 0"
        " AND expires_at > statement_timestamp()"
        "   + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'",
    // A Statement: key, claim_id, host, process, thread, metadata (JSON or NULL).
    // A claim never expires. Succeeds for a new or free key, or for a retry with the same claim
    // id; returns no row when the key is already claimed or held.
    .claim =
        "INSERT INTO {{table:locks}} AS l (lock_key, lease_id, owner_host, owner_process,"
        " owner_thread, hold_count, fencing_token, acquired_at, expires_at, metadata)"
        " VALUES ({{param:key}}, {{param:claim_id}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, 1,"
        " (extract(epoch FROM statement_timestamp()) * 1000000)::bigint,"
        " statement_timestamp(), 'infinity', {{param:metadata}}::jsonb)"
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
    .fair_check = "",  // acquire checks the queue itself
    // ttl_ms is the place's TTL here, lease_ttl_ms the lease a release may grant (as acquire's
    // q).
    .enqueue =
        "INSERT INTO {{table:lock_waiters}} AS w (waiter_id, lock_key, owner_host, owner_process,"
        " owner_thread, registered_at, expires_at, ttl_ms, lock_delay_ms, metadata, refreshed_at,"
        " sent_us)"
        " VALUES ({{param:waiter_id}}, {{param:key}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, statement_timestamp(),"
        " statement_timestamp() + {{param:ttl_ms}}::bigint * interval '1 millisecond',"
        " {{param:lease_ttl_ms}}::bigint, {{param:lock_delay_ms}}::bigint,"
        " {{param:metadata}}::jsonb, statement_timestamp(), {{param:sent_us}}::bigint)"
        " ON CONFLICT (waiter_id) DO UPDATE SET " DBLOCK_PLACE_REFRESH " RETURNING seq",
    // A head that leaves while the key is free (its time ran out, or an error ended its wait)
    // passes the turn on: the next live waiter is named in a notification, as a release names
    // the head. The DELETE is not visible to the statement's own reads, so the leaver is left
    // out by its id. A waiter that leaves although a release granted it the key (its time ran
    // out before it took the grant) frees the key (f) and names the next head too (m). Params:
    // waiter_id, channel, key, host, process, thread.
    .leave =
        "WITH d AS (DELETE FROM {{table:lock_waiters}} WHERE waiter_id = {{param:waiter_id}}"
        " RETURNING lock_key, seq),"
        " f AS (UPDATE {{table:locks}} SET hold_count = 0, expires_at = statement_timestamp()"
        "  WHERE lock_key = {{param:key}} AND lease_id = {{param:waiter_id}}"
        "  AND owner_host = {{param:host}} AND owner_process = {{param:process}}"
        "  AND owner_thread = {{param:thread}} AND hold_count = 1"
        "  AND expires_at > statement_timestamp() RETURNING lock_key),"
        " m AS (SELECT f.lock_key, COALESCE((SELECT w.waiter_id FROM {{table:lock_waiters}} w"
        "   WHERE w.lock_key = f.lock_key AND w.expires_at > statement_timestamp()"
        "   AND w.waiter_id <> {{param:waiter_id}} ORDER BY w.seq LIMIT 1), '') AS head FROM f),"
        " n AS (SELECT d.lock_key, (SELECT w.waiter_id FROM {{table:lock_waiters}} w"
        "   WHERE w.lock_key = d.lock_key AND w.expires_at > statement_timestamp()"
        "   AND w.waiter_id <> {{param:waiter_id}} ORDER BY w.seq LIMIT 1) AS head FROM d"
        "  WHERE NOT EXISTS (SELECT 1 FROM {{table:lock_waiters}} e WHERE e.lock_key = d.lock_key"
        "   AND e.expires_at > statement_timestamp() AND e.seq < d.seq)"
        "  AND NOT EXISTS (SELECT 1 FROM {{table:locks}} l WHERE l.lock_key = d.lock_key"
        "   AND l.expires_at > statement_timestamp()))"
        " SELECT pg_notify({{param:channel}}, x.head || chr(10) || x.lock_key)::text AS notified"
        " FROM (SELECT n.lock_key, n.head FROM n WHERE n.head IS NOT NULL"
        "  UNION ALL SELECT m.lock_key, m.head FROM m) x",
    // A candidate's registration for hand-offs: a place in the key's queue with the lease a
    // hand-off gives it. Sent again, it keeps its place and takes the newer lease (as enqueue).
    .offer =
        "INSERT INTO {{table:lock_waiters}} AS w (waiter_id, lock_key, owner_host, owner_process,"
        " owner_thread, registered_at, expires_at, ttl_ms, lock_delay_ms, metadata)"
        " VALUES ({{param:waiter_id}}, {{param:key}}, {{param:host}}, {{param:process}},"
        " {{param:thread}}, statement_timestamp(),"
        " statement_timestamp() + {{param:place_ttl_ms}}::bigint * interval '1 millisecond',"
        " {{param:ttl_ms}}, {{param:lock_delay_ms}}, {{param:metadata}}::jsonb)"
        " ON CONFLICT (waiter_id) DO UPDATE SET expires_at = EXCLUDED.expires_at,"
        " ttl_ms = EXCLUDED.ttl_ms, lock_delay_ms = EXCLUDED.lock_delay_ms,"
        " metadata = EXCLUDED.metadata",
    .candidate =
        "SELECT waiter_id, owner_host, owner_process, owner_thread, ttl_ms,"
        " COALESCE(lock_delay_ms, 0) AS lock_delay_ms,"
        " metadata::text AS metadata FROM {{table:lock_waiters}}"
        " WHERE lock_key = {{param:key}} AND expires_at > statement_timestamp()"
        " AND ttl_ms IS NOT NULL AND NOT (owner_host = {{param:host}}"
        "   AND owner_process = {{param:process}} AND owner_thread = {{param:thread}})"
        " AND ({{param:to_thread}}::text IS NULL OR owner_thread = {{param:to_thread}})"
        " ORDER BY seq LIMIT 1",
    .wake = "SELECT pg_notify({{param:channel}}, chr(10) || {{param:key}})::text AS notified",
    // FOR SHARE: a takeover (ON CONFLICT DO UPDATE), a release, a renewal and the cleaner's
    // DELETE wait for the fencing transaction to end; other fences do not. statement_timestamp():
    // this statement's clock, not the transaction's start. Under READ COMMITTED a row changed by
    // a takeover committed while this statement waited is read anew and no longer matches.
    .fence =
        "SELECT fencing_token FROM {{table:locks}} WHERE lock_key = {{param:key}}"
        " AND owner_host = {{param:host}} AND owner_process = {{param:process}}"
        " AND owner_thread = {{param:thread}} AND fencing_token = {{param:token}}"
        " AND hold_count > 0"
        " AND expires_at > statement_timestamp()"
        "   + {{param:lock_delay_ms}}::bigint * interval '1 millisecond' FOR SHARE",
};

// The counting semaphore. Times come from statement_timestamp(), as in the unique-key lock.
// A permit row is free once expires_at has passed (release sets it to now); rows are freed,
// never deleted, but by the cleaner.
#define DBLOCK_PERMIT_OWNER                                            \
  " owner_host = {{param:host}} AND owner_process = {{param:process}}" \
  " AND owner_thread = {{param:thread}} AND lock_key = {{param:key}}"  \
  " AND slot = {{param:slot}}::integer AND fencing_token = {{param:token}}::bigint"

constexpr SemaphoreSql kSemaphore = {
    // One statement: the key's live permits, the free slots of its limit from first to last
    // (only when the caller asks for the stored limit, and none while slot blocked_by is held),
    // one of them at random (or this lease id's own live slot: a
    // retry of an attempt that took it), and the upsert that takes it. Two acquires that picked
    // one slot are decided by ON CONFLICT ... WHERE: one of them finds no free row and reports
    // free > 0 with no permit. A try that finds no free slot writes nothing.
    // The key's limit row is share-locked (FOR KEY SHARE) until the permit is committed, so the
    // cleaner, which deletes a limit only once it has locked the row and then sees no permit
    // row of the key (see kCleanedTables), never deletes a limit under a permit being taken.
    .acquire =
        "WITH s AS (SELECT permits FROM {{table:semaphores}} WHERE lock_key = {{param:key}}"
        "   FOR KEY SHARE),"
        " live AS (SELECT slot, lease_id FROM {{table:semaphore_permits}}"
        "   WHERE lock_key = {{param:key}} AND expires_at > statement_timestamp()),"
        " free AS (SELECT g.slot FROM s, generate_series({{param:first}}::integer,"
        "   LEAST({{param:last}}::integer, s.permits - 1)) AS g(slot)"
        "   WHERE s.permits = {{param:permits}}::integer"
        "   AND g.slot NOT IN (SELECT slot FROM live)"
        "   AND {{param:blocked_by}}::integer NOT IN (SELECT slot FROM live)),"
        " pick AS (SELECT slot FROM (SELECT slot, 0 AS o FROM live"
        "   WHERE lease_id = {{param:lease_id}}"
        "   UNION ALL (SELECT slot, 1 FROM free ORDER BY random() LIMIT 1)) c ORDER BY o LIMIT 1),"
        " a AS (INSERT INTO {{table:semaphore_permits}} AS p (lock_key, slot, lease_id, owner_host,"
        "   owner_process, owner_thread, fencing_token, acquired_at, expires_at, metadata)"
        "   SELECT {{param:key}}::text, pick.slot, {{param:lease_id}}::text, {{param:host}}::text,"
        "   {{param:process}}::text, {{param:thread}}::text,"
        "   (extract(epoch FROM statement_timestamp()) * 1000000)::bigint * 1024 + pick.slot,"
        "   statement_timestamp(),"
        "   statement_timestamp()"
        "   + ({{param:ttl_ms}}::bigint + {{param:lock_delay_ms}}::bigint)"
        "     * interval '1 millisecond',"
        "   {{param:metadata}}::jsonb FROM pick"
        "   ON CONFLICT (lock_key, slot) DO UPDATE SET"
        "   fencing_token = CASE WHEN p.lease_id = EXCLUDED.lease_id THEN p.fencing_token"
        "     ELSE GREATEST(p.fencing_token + 1024, EXCLUDED.fencing_token) END,"
        "   acquired_at = CASE WHEN p.lease_id = EXCLUDED.lease_id THEN p.acquired_at"
        "     ELSE EXCLUDED.acquired_at END,"
        "   expires_at = GREATEST(CASE WHEN p.lease_id = EXCLUDED.lease_id THEN p.expires_at END,"
        "     EXCLUDED.expires_at),"
        "   previous_lease_id = CASE WHEN p.lease_id = EXCLUDED.lease_id"
        "     THEN p.previous_lease_id ELSE p.lease_id END,"
        "   lease_id = EXCLUDED.lease_id, owner_host = EXCLUDED.owner_host,"
        "   owner_process = EXCLUDED.owner_process, owner_thread = EXCLUDED.owner_thread,"
        "   metadata = EXCLUDED.metadata"
        "   WHERE p.expires_at <= statement_timestamp() OR p.lease_id = EXCLUDED.lease_id"
        "   RETURNING p.slot, p.fencing_token)"
        " SELECT (SELECT permits FROM s) AS permits, (SELECT count(*) FROM free) AS free,"
        " a.slot, a.fencing_token FROM (SELECT 1) o LEFT JOIN a ON true",
    .slots = "",
    .acquire_slot = "",
    .define =
        "INSERT INTO {{table:semaphores}} (lock_key, permits, changed_at)"
        " VALUES ({{param:key}}, {{param:permits}}::integer, statement_timestamp())"
        " ON CONFLICT (lock_key) DO NOTHING",
    .set_limit =
        "INSERT INTO {{table:semaphores}} (lock_key, permits, changed_at)"
        " VALUES ({{param:key}}, {{param:permits}}::integer, statement_timestamp())"
        " ON CONFLICT (lock_key) DO UPDATE SET permits = EXCLUDED.permits,"
        " changed_at = EXCLUDED.changed_at",
    // The release id is written into lease_id: a retry after a lost reply finds the row its
    // first attempt freed (and changes nothing) instead of reporting the permit not held; or,
    // when another lease took the slot since, finds it in previous_lease_id (and changes nothing
    // either).
    // A permit freed now (not kept by min_hold) NOTIFYs `channel` (the permit table's; empty:
    // none, for a lock object whose waiters do not listen) with the key (payload as the
    // unique-key lock's, without a queue head): a waiter of each lock object that listens wakes
    // (release_listener.hpp). One row per row matched.
    .release =
        "WITH u AS (UPDATE {{table:semaphore_permits}} SET expires_at = CASE"
        "   WHEN lease_id = {{param:release_id}} OR previous_lease_id = {{param:release_id}}"
        "   THEN expires_at ELSE GREATEST(statement_timestamp(),"
        "     acquired_at + {{param:min_hold_ms}}::bigint * interval '1 millisecond') END,"
        " lease_id = CASE WHEN previous_lease_id = {{param:release_id}} THEN lease_id"
        "   ELSE {{param:release_id}} END"
        " WHERE (" DBLOCK_PERMIT_OWNER
        " AND (lease_id = {{param:release_id}}"
        "   OR (lease_id = {{param:lease_id}} AND expires_at > statement_timestamp()"
        "     + {{param:lock_delay_ms}}::bigint * interval '1 millisecond')))"
        " OR (lock_key = {{param:key}} AND slot = {{param:slot}}::integer"
        "   AND previous_lease_id = {{param:release_id}})"
        " RETURNING lock_key, expires_at)"
        " SELECT CASE WHEN expires_at <= statement_timestamp() AND {{param:channel}}::text <> ''"
        "   THEN pg_notify({{param:channel}}, chr(10) || lock_key)::text END AS notified FROM u",
    .renew =
        "UPDATE {{table:semaphore_permits}} SET expires_at = GREATEST(expires_at,"
        "   statement_timestamp()"
        "   + ({{param:ttl_ms}}::bigint + {{param:lock_delay_ms}}::bigint)"
        "     * interval '1 millisecond')"
        " WHERE" DBLOCK_PERMIT_OWNER
        " AND lease_id = {{param:lease_id}}"
        " AND expires_at > statement_timestamp()"
        "   + {{param:lock_delay_ms}}::bigint * interval '1 millisecond'",
    .fence = "SELECT fencing_token FROM {{table:semaphore_permits}} WHERE" DBLOCK_PERMIT_OWNER
             " AND lease_id = {{param:lease_id}} AND expires_at > statement_timestamp()"
             " + {{param:lock_delay_ms}}::bigint * interval '1 millisecond' FOR SHARE",
    // FOR NO KEY UPDATE (the lock an UPDATE takes) conflicts with FOR SHARE. The rows are locked
    // in a subquery (no aggregate may carry a locking clause), whose predicate leaves expiry out:
    // an expired row held by a fenced transaction is waited for, then counted as it is then.
    .fence_exclusive =
        "SELECT fencing_token FROM {{table:semaphore_permits}} WHERE" DBLOCK_PERMIT_OWNER
        " AND lease_id = {{param:lease_id}} AND expires_at > statement_timestamp()"
        " + {{param:lock_delay_ms}}::bigint * interval '1 millisecond' FOR NO KEY UPDATE",
    .live_in_shared =
        "SELECT count(*) FILTER (WHERE expires_at > statement_timestamp()) AS n FROM"
        " (SELECT expires_at FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND slot BETWEEN {{param:first}}::integer AND {{param:last}}::integer FOR SHARE) r",
    .live_in_exclusive =
        "SELECT count(*) FILTER (WHERE expires_at > statement_timestamp()) AS n FROM"
        " (SELECT expires_at FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND slot BETWEEN {{param:first}}::integer AND {{param:last}}::integer"
        " FOR NO KEY UPDATE) r",
    // A plain read: the loss it explains has happened; a fenced transaction is not waited for.
    .loss =
        "SELECT count(*) FILTER (WHERE expires_at > statement_timestamp()"
        "   AND lease_id NOT LIKE 'r-%' AND fencing_token <> {{param:token}}::bigint) AS taken,"
        " count(*) FILTER (WHERE slot = {{param:slot}}::integer"
        "   AND fencing_token = {{param:token}}::bigint AND lease_id = {{param:lease_id}})"
        "   AS mine"
        " FROM {{table:semaphore_permits}} WHERE lock_key = {{param:key}}"
        " AND (slot = {{param:slot}}::integer"
        "   OR slot BETWEEN {{param:first}}::integer AND {{param:last}}::integer)",
};

// The tables the cleaner empties, and whose privileges `dblock doctor` checks: a table of a
// new strategy is added here. Each with a delete (grace_ms, limit: the batch size) and a count
// (grace_ms, limit: the most rows to count; a read that changes nothing, column "n").
constexpr CleanedTable kCleanedTables[] = {
    // The cleaner. Statements (sql/statement.hpp): grace_ms, limit (batch size). Deletes at most
    // that many rows whose expires_at lies more than the grace in the past, oldest first. The
    // cut-off is computed once (an InitPlan), so the inner SELECT is a range scan of the expires_at
    // index, and ctid = ANY(ARRAY(...)) makes the DELETE fetch each row straight by its physical
    // address (a TID scan; looking the keys up in the primary key index again cost most of the
    // statement's time, and IN (...) plans a sequential scan of the table). The rows the inner
    // SELECT returns are locked by this statement, so no one can update or delete them (and move
    // their ctid) before the DELETE; a row updated just before it was locked has a new version the
    // statement's snapshot does not see, so it is left for a later run, never deleted wrongly.
    // SKIP LOCKED leaves rows another session is changing (a renewal, an acquire, another
    // cleaner) alone, so two cleaners never wait on or count the same row; the outer WHERE
    // re-checks expiry on the row version the DELETE sees, so a row renewed after the inner
    // SELECT survives. Claims ('infinity') never qualify.
    {"locks",
     "DELETE FROM {{table:locks}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:locks}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " ORDER BY expires_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))"
     " AND expires_at <= clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond'",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:locks}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " LIMIT {{param:limit}}) s"},
    // Row locks and versions unused for longer than the grace.
    // SKIP LOCKED leaves a row that a holder has locked (or a committer is updating) alone.
    // Rows are deleted by ctid, as in the locks table's delete.
    {"row_locks",
     "DELETE FROM {{table:row_locks}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:row_locks}}"
     " WHERE used_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " ORDER BY used_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))"
     " AND used_at <= clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 millisecond'",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:row_locks}}"
     " WHERE used_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " LIMIT {{param:limit}}) s"},
    {"versions",
     "DELETE FROM {{table:versions}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:versions}}"
     " WHERE updated_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " ORDER BY updated_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))"
     " AND updated_at <= clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond'",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:versions}}"
     " WHERE updated_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " LIMIT {{param:limit}}) s"},
    // Registrations of fair waiters that stopped refreshing them (a waiter that died).
    {"lock_waiters",
     "DELETE FROM {{table:lock_waiters}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:lock_waiters}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " ORDER BY expires_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))"
     " AND expires_at <= clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond'",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:lock_waiters}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " LIMIT {{param:limit}}) s"},
    // Semaphore permits unused for longer than the grace.
    {"semaphore_permits",
     "DELETE FROM {{table:semaphore_permits}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:semaphore_permits}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " ORDER BY expires_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))"
     " AND expires_at <= clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond'",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:semaphore_permits}}"
     " WHERE expires_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " LIMIT {{param:limit}}) s"},
    // The limits of semaphore keys left without any permit row (the permits were cleaned above),
    // unchanged for longer than the grace. Never while a permit of the key is live, whatever the
    // grace: an acquire share-locks the limit row until its permit is committed (kSemaphore), so
    // the candidates are locked first (skipping the rows acquires hold) and each is deleted only
    // if a snapshot taken after that lock still shows no permit row of its key (lock_sql). An
    // acquire waiting for the lock then finds no limit and stores it again.
    {"semaphores",
     "DELETE FROM {{table:semaphores}} s"
     " WHERE s.lock_key IN (SELECT jsonb_array_elements_text({{param:keys}}::jsonb))"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p WHERE p.lock_key = s.lock_key)",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:semaphores}} s"
     " WHERE changed_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p WHERE p.lock_key = s.lock_key)"
     " LIMIT {{param:limit}}) c",
     "SELECT s.lock_key FROM {{table:semaphores}} s"
     " WHERE s.changed_at <= (SELECT clock_timestamp() - {{param:grace_ms}}::bigint * interval '1 "
     "millisecond')"
     " AND NOT EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p WHERE p.lock_key = s.lock_key)"
     " ORDER BY s.changed_at LIMIT {{param:limit}} FOR UPDATE OF s SKIP LOCKED"},
    // The history of holds (migration 0009): rows that ended more than the history retention
    // (retention_ms) ago, oldest first by the ended_at index, deleted by ctid as above. History
    // rows are never updated; SKIP LOCKED keeps two cleaners apart.
    {"history",
     "DELETE FROM {{table:history}} WHERE ctid = ANY(ARRAY("
     " SELECT ctid FROM {{table:history}}"
     " WHERE ended_at <= (SELECT clock_timestamp()"
     "   - {{param:retention_ms}}::bigint * interval '1 millisecond')"
     " ORDER BY ended_at LIMIT {{param:limit}} FOR UPDATE SKIP LOCKED))",
     "SELECT count(*) AS n FROM (SELECT 1 FROM {{table:history}}"
     " WHERE ended_at <= (SELECT clock_timestamp()"
     "   - {{param:retention_ms}}::bigint * interval '1 millisecond')"
     " LIMIT {{param:limit}}) s"},
};

constexpr CleanerSql kCleaner = {
    .tables = kCleanedTables,
    // No params. NULL when no row has expired.
    .locks_oldest =
        "SELECT to_char(min(expires_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        " AS oldest FROM {{table:locks}} WHERE expires_at <= clock_timestamp()",
};

constexpr RowLockSql kRowLock = {
    // Row locks. The key's row is created first, in autocommit (ON CONFLICT DO NOTHING does not
    // wait on a row another transaction has locked), then locked and stamped in one statement
    // inside the lease's transaction: the CTE takes the row lock (NOWAIT for a try; bounded by
    // lock_timeout for a wait) and the UPDATE records the holder and a fencing token from the
    // row_lock_tokens sequence (migration 0004), raised past the row's previous token. nextval()
    // is not undone by a rollback, so a token handed to a lease whose transaction then rolled
    // back (dropped lease, killed session) is never handed out again; the row's own token is.
    // (Except across a server crash that loses the sequence's unflushed WAL: a value taken by a
    // transaction that never committed may then come again.) clock_timestamp(), not
    // statement_timestamp(): a wait may end long after the statement started. No row returned:
    // the key's row is missing (the cleaner deleted it); the strategy creates it again.
    // Statements (sql/statement.hpp): key, host, process, thread (the holder), timeout (a
    // lock_timeout as text), row_key (a row of the caller's own table).
    // exists: column "found" when the row exists. Asked first because the INSERT below
    // waits when the row's latest version was written by a transaction still open (a holder stamps
    // the row it locks), which would turn a NOWAIT try into a wait for the holder's commit.
    .exists = "SELECT 1 AS found FROM {{table:row_locks}} WHERE lock_key = {{param:key}}",
    .create =
        "INSERT INTO {{table:row_locks}} (lock_key, used_at)"
        " VALUES ({{param:key}}, clock_timestamp())"
        " ON CONFLICT (lock_key) DO NOTHING",
    // The timeout as text ('300ms'; '0' waits forever), for this transaction only. Column
    // "previous": the setting replaced (select-list items are evaluated left to right), which the
    // strategy puts back once the lock is held.
    .set_timeout =
        "SELECT current_setting('lock_timeout') AS previous,"
        " set_config('lock_timeout', {{param:timeout}}, true) AS lock_timeout",
    .session_wait = "",
    .session_wait_reset = "",
    // Column "fencing_token".
    .try_lock =
        "WITH l AS (SELECT lock_key FROM {{table:row_locks}} WHERE lock_key = {{param:key}}"
        " FOR UPDATE NOWAIT)"
        " UPDATE {{table:row_locks}} r SET owner_host = {{param:host}},"
        " owner_process = {{param:process}}, owner_thread = {{param:thread}},"
        " used_at = clock_timestamp(), fencing_token = GREATEST("
        "r.fencing_token + 1, nextval('{{table:row_lock_tokens}}'))"
        " FROM l WHERE r.lock_key = l.lock_key RETURNING r.fencing_token",
    .wait =
        "WITH l AS (SELECT lock_key FROM {{table:row_locks}} WHERE lock_key = {{param:key}}"
        " FOR UPDATE)"
        " UPDATE {{table:row_locks}} r SET owner_host = {{param:host}},"
        " owner_process = {{param:process}}, owner_thread = {{param:thread}},"
        " used_at = clock_timestamp(), fencing_token = GREATEST("
        "r.fencing_token + 1, nextval('{{table:row_lock_tokens}}'))"
        " FROM l WHERE r.lock_key = l.lock_key RETURNING r.fencing_token",
    .stamp = "",
    // row_key: the primary key value (sent untyped: the server takes the column's type, and the
    // primary key index).
    .target_try =
        "SELECT 1 AS found FROM {{target}} WHERE {{column}} = {{param:row_key}} FOR UPDATE NOWAIT",
    .target_wait =
        "SELECT 1 AS found FROM {{target}} WHERE {{column}} = {{param:row_key}} FOR UPDATE",
};

constexpr SessionLockSql kSessionLock = {
    // Session-level advisory locks on a bigint. The fencing token comes from the row_lock_tokens
    // sequence (migration 0004; shared with row locks, so tokens increase across every key) in
    // the same statement, and only once the lock is granted: a wait that times out takes none,
    // and a token taken after the grant is larger than any a holder before it got.
    .try_lock =
        "SELECT CASE WHEN pg_try_advisory_lock({{param:lock}}::bigint)"
        " THEN nextval('{{table:row_lock_tokens}}') END AS fencing_token",
    // One round trip: set_config(..., true) sets lock_timeout for the statement's own implicit
    // transaction only (the session's setting is back when it ends; the session lock outlives
    // it), and is evaluated before the lock (select-list order); the subquery (OFFSET 0 keeps it
    // one) yields its row only once pg_advisory_lock returned, so nextval runs after the grant.
    // A wait that runs out fails with lock_not_available (55P03).
    .wait =
        "SELECT nextval('{{table:row_lock_tokens}}') AS fencing_token FROM ("
        "SELECT set_config('lock_timeout', {{param:timeout}}, true) AS t,"
        " pg_advisory_lock({{param:lock}}::bigint) AS l OFFSET 0) w",
    .fractional_wait = true,
    .release = "SELECT pg_advisory_unlock({{param:lock}}::bigint)::int AS released",
    .unlock_all = "SELECT pg_advisory_unlock_all()",
};

constexpr VersionSql kVersions = {
    // Optimistic versions. A version is the database clock in µs, raised past the previous
    // version (GREATEST(previous + 1, clock)): a row deleted and created again starts above every
    // version handed out before, so an old reader's compare-and-set can never match it (no ABA).
    // Statements: key (cas also the version read). Column "version".
    .read = "SELECT version FROM {{table:versions}} WHERE lock_key = {{param:key}}",
    .create =
        "INSERT INTO {{table:versions}} (lock_key, version, updated_at)"
        " VALUES ({{param:key}}, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,"
        " clock_timestamp()) ON CONFLICT (lock_key) DO NOTHING",
    // One row ("version": the new one) when it still was the version read.
    .cas =
        "UPDATE {{table:versions}} SET updated_at = clock_timestamp(), version = GREATEST("
        "version + 1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)"
        " WHERE lock_key = {{param:key}} AND version = {{param:version}} RETURNING version",
};

// The rows `dblock locks` lists, with their columns as list_locks() reads them: held now, finished
// but kept taken for their min_hold (hold_count 0), or expired but not yet cleaned.
#define DBLOCK_LISTED_ROWS                                                                 \
  "SELECT lock_key AS key, lease_id, owner_host, owner_process, owner_thread, hold_count," \
  " fencing_token,"                                                                        \
  " to_char(acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "      \
  "acquired_at,"                                                                           \
  " CASE WHEN expires_at = 'infinity' THEN 'never' ELSE"                                   \
  " to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') END"       \
  " AS expires_at,"                                                                        \
  " CASE WHEN expires_at <= clock_timestamp() THEN 1 ELSE 0 END AS expired,"               \
  " metadata::text AS metadata"                                                            \
  " FROM {{table:locks}} WHERE (hold_count > 0 OR expires_at > clock_timestamp())"

constexpr OperatorSql kOperators = {
    // Free rows are left out.
    .list = DBLOCK_LISTED_ROWS " ORDER BY lock_key",
    // A Statement: prefix. list for the keys that start with it: left() and = compare it as a
    // value, so % and _ in a prefix are plain characters.
    .list_prefix = DBLOCK_LISTED_ROWS
    " AND left(lock_key, length({{param:prefix}})) = {{param:prefix}}"
    " ORDER BY lock_key",
    // A Statement: key. list for that key alone, found by the primary key.
    .row = DBLOCK_LISTED_ROWS " AND lock_key = {{param:key}}",
    // A Statement: key, lease_id, token (as an operator read them), channel (for NOTIFY).
    // An operator's release (`dblock release`): frees the row as the last release does
    // (hold_count 0, expires_at now; also a row a release left taken for its min_hold) and
    // NOTIFYs waiters, but only while it still carries the lease the operator was shown. The
    // fencing token stays, so the next holder's is higher; the old holder's renewals and release
    // then match nothing (the lease is lost). One row, column "notified", when it freed the row;
    // no row when the lease had changed meanwhile. Ending a hold, it writes 'f-' before the lease
    // id (within the column's 64 characters), which tells the history (kHistory) an operator's
    // release from the holder's own, whose release_rest also leaves the lease id as it was; a
    // row already released (kept for its min_hold) keeps the holder's release id, which the
    // holder's retried release looks for.
    .release =
        "WITH r AS (UPDATE {{table:locks}} SET hold_count = 0, expires_at = statement_timestamp(),"
        " lease_id = CASE WHEN hold_count > 0 THEN 'f-' || left(lease_id, 62) ELSE lease_id END"
        " WHERE lock_key = {{param:key}} AND lease_id = {{param:lease_id}}"
        " AND fencing_token = {{param:token}}"
        " AND (hold_count > 0 OR expires_at > statement_timestamp())"
        " RETURNING lock_key)"
        " SELECT pg_notify({{param:channel}}, chr(10) || lock_key)::text AS notified FROM r",
    .waiters =
        "SELECT lock_key AS key, count(*) AS n FROM {{table:lock_waiters}}"
        " WHERE expires_at > clock_timestamp() GROUP BY lock_key",
    // seq is an identity column: the join finds the head alone, by the (lock_key, seq) index.
    .waiter_queues =
        "SELECT q.lock_key AS key, q.n, w.owner_host AS head_host,"
        " w.owner_process AS head_process, w.owner_thread AS head_thread,"
        " to_char(w.registered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        " AS head_since"
        " FROM (SELECT lock_key, count(*) AS n, min(seq) AS head_seq"
        "  FROM {{table:lock_waiters}} WHERE expires_at > statement_timestamp()"
        "  AND left(lock_key, length({{param:prefix}})) = {{param:prefix}}"
        "  GROUP BY lock_key) q"
        " JOIN {{table:lock_waiters}} w ON w.lock_key = q.lock_key AND w.seq = q.head_seq"
        " ORDER BY q.lock_key",
    .now =
        "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS now",
    .permits =
        "SELECT p.lock_key AS key, p.slot, s.permits, p.lease_id, p.owner_host, p.owner_process,"
        " p.owner_thread, CASE WHEN p.lease_id LIKE 'r-%' THEN 0 ELSE 1 END AS hold_count,"
        " p.fencing_token,"
        " to_char(p.acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "
        "acquired_at,"
        " to_char(p.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "
        "expires_at,"
        " CASE WHEN p.expires_at <= clock_timestamp() THEN 1 ELSE 0 END AS expired,"
        " p.metadata::text AS metadata"
        " FROM {{table:semaphore_permits}} p"
        " LEFT JOIN {{table:semaphores}} s ON s.lock_key = p.lock_key"
        " WHERE (NOT p.lease_id LIKE 'r-%' OR p.expires_at > clock_timestamp())"
        " AND left(p.lock_key, length({{param:prefix}})) = {{param:prefix}}"
        " ORDER BY p.lock_key, p.slot",
    .release_permit =
        "UPDATE {{table:semaphore_permits}} SET expires_at = statement_timestamp(),"
        " lease_id = CASE WHEN lease_id LIKE 'r-%' THEN lease_id ELSE 'r-' || lease_id END"
        " WHERE lock_key = {{param:key}} AND slot = {{param:slot}}::integer"
        " AND lease_id = {{param:lease_id}} AND fencing_token = {{param:token}}::bigint"
        " AND expires_at > statement_timestamp()",
};

// The history of holds (HistorySql): an AFTER UPDATE and an AFTER DELETE row trigger on the lock
// table, whose WHEN lets through only the changes that end a tenure, so that every other row
// change (acquire, re-entry, a release of an inner hold, renew, a refused try) pays one cheap
// comparison and the function runs only when a tenure ended. What ended it, read from the change:
//  - the same token and hold_count down to 0 (release, release_rest, the operator's release, which
//    writes 'f-' before the lease id when it ends a hold): force_released for the operator's mark,
//    else released, at the statement's time; but a hold whose row had expired before the
//    statement (only the operator's release frees such a row) ended by expiring, at expires_at;
//  - a new token: a hand-over (the row still live: the holder gave the key to a waiter, released
//    at the statement's time) or a takeover of a row that had expired (at expires_at; expired when
//    its owner took it again, taken_over when another did);
//  - a row deleted with holds left (the cleaner, long after it expired): cleaned, at expires_at.
// A tenure that was released and then taken or cleaned writes nothing more (hold_count was 0), so
// each tenure gives one row, whatever its re-entries. statement_timestamp() is the triggering
// statement's clock, the one its own "expired?" tests read. SECURITY DEFINER: the function
// writes with the rights of the role that enabled history (which owns it), so the roles that lock
// need no privilege on the history table; the search path is the one it was created with.
constexpr std::string_view kHistoryTriggers[] = {"locks_ended", "locks_cleaned"};

constexpr HistoryStep kHistoryEnable[] = {
    // Enables (and disables) wait for each other and for the lock statements in flight.
    {"", "LOCK TABLE {{table:locks}} IN SHARE ROW EXCLUSIVE MODE"},
    {"",
     "CREATE OR REPLACE FUNCTION {{table:history_record}}() RETURNS trigger"
     " LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $history$"
     " BEGIN"
     " INSERT INTO {{table:history}} (lock_key, fencing_token, owner_host, owner_process,"
     "   owner_thread, acquired_at, ended_at, ended_how)"
     " VALUES (OLD.lock_key, OLD.fencing_token, OLD.owner_host, OLD.owner_process,"
     "   OLD.owner_thread, OLD.acquired_at,"
     "   CASE WHEN TG_OP = 'DELETE' OR OLD.expires_at <= statement_timestamp()"
     "     THEN LEAST(OLD.expires_at, statement_timestamp()) ELSE statement_timestamp() END,"
     "   CASE WHEN TG_OP = 'DELETE' THEN 'cleaned'"
     "     WHEN OLD.expires_at > statement_timestamp() THEN"
     "       CASE WHEN NEW.lease_id = 'f-' || left(OLD.lease_id, 62) THEN 'force_released'"
     "       ELSE 'released' END"
     "     WHEN NEW.fencing_token <> OLD.fencing_token AND NOT (NEW.owner_host = OLD.owner_host"
     "       AND NEW.owner_process = OLD.owner_process AND NEW.owner_thread = OLD.owner_thread)"
     "       THEN 'taken_over'"
     "     ELSE 'expired' END);"
     " RETURN NULL;"
     " END $history$"},
    {"", "REVOKE ALL ON FUNCTION {{table:history_record}}() FROM PUBLIC"},
    {"", "DROP TRIGGER IF EXISTS {{name:locks_ended}} ON {{table:locks}}"},
    {"",
     "CREATE TRIGGER {{name:locks_ended}} AFTER UPDATE ON {{table:locks}} FOR EACH ROW"
     " WHEN (OLD.hold_count > 0"
     "   AND (NEW.hold_count = 0 OR NEW.fencing_token <> OLD.fencing_token))"
     " EXECUTE FUNCTION {{table:history_record}}()"},
    {"", "DROP TRIGGER IF EXISTS {{name:locks_cleaned}} ON {{table:locks}}"},
    {"",
     "CREATE TRIGGER {{name:locks_cleaned}} AFTER DELETE ON {{table:locks}} FOR EACH ROW"
     " WHEN (OLD.hold_count > 0) EXECUTE FUNCTION {{table:history_record}}()"},
};

constexpr HistoryStep kHistoryDisable[] = {
    {"", "LOCK TABLE {{table:locks}} IN SHARE ROW EXCLUSIVE MODE"},
    {"", "DROP TRIGGER IF EXISTS {{name:locks_ended}} ON {{table:locks}}"},
    {"", "DROP TRIGGER IF EXISTS {{name:locks_cleaned}} ON {{table:locks}}"},
    {"", "DROP FUNCTION IF EXISTS {{table:history_record}}()"},
};

constexpr HistorySql kHistory = {
    .unavailable = "",
    .triggers = kHistoryTriggers,
    .present =
        "SELECT t.tgname::text AS name FROM pg_trigger t"
        " WHERE t.tgrelid = to_regclass({{param:qualified}})"
        " AND t.tgname::text IN ({{param:first}}::text, {{param:second}}::text)",
    .in_one_transaction = true,
    .enable = kHistoryEnable,
    .disable = kHistoryDisable,
    // The (lock_key, ended_at) index, walked backwards.
    .read =
        "SELECT lock_key AS key, fencing_token, owner_host, owner_process, owner_thread,"
        " to_char(acquired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        " AS acquired_at,"
        " to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS ended_at,"
        " ended_how FROM {{table:history}} WHERE lock_key = {{param:key}}"
        " AND ({{param:since_ms}}::bigint IS NULL OR ended_at >= clock_timestamp()"
        "   - {{param:since_ms}}::bigint * interval '1 millisecond')"
        " ORDER BY ended_at DESC, id DESC LIMIT {{param:limit}}::bigint",
};

constexpr DoctorSql kDoctor = {
    // `dblock doctor`. Columns "version" and "flavour".
    .server = "SELECT current_setting('server_version') AS version, 'PostgreSQL' AS flavour",
    // Column "state": empty on a writable primary, else "standby" or "read_only".
    .writable =
        "SELECT CASE WHEN pg_is_in_recovery() THEN 'standby'"
        " WHEN current_setting('default_transaction_read_only') = 'on' THEN 'read_only'"
        " ELSE '' END AS state",
    // One row: the session's synchronous_commit, synchronous_standby_names, and the standbys
    // streaming from this server: all of them, the synchronous ones (sync or quorum), and those
    // whose state this role may not see (it needs pg_read_all_stats).
    .replication =
        "SELECT current_setting('synchronous_commit') AS synchronous_commit,"
        " current_setting('synchronous_standby_names') AS standby_names,"
        " (SELECT count(*) FROM pg_stat_replication) AS standbys,"
        " (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))"
        "   AS synchronous,"
        " (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL) AS hidden",
    .time_zone = "SELECT current_setting('TimeZone') AS zone",
    .clock = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS us",
    .probe_select = "SELECT {{column}} FROM {{target}} WHERE 1 = 0",
    .probe_insert = "INSERT INTO {{target}} SELECT * FROM {{target}} WHERE 1 = 0",
    .probe_update = "UPDATE {{target}} SET {{column}} = {{column}} WHERE 1 = 0",
    .probe_delete = "DELETE FROM {{target}} WHERE 1 = 0",
    .probe_create = "",
    .probe_alter = "",
    // Column "ok": 1 when this role may take row-lock tokens from the sequence (nextval).
    .sequence_usage =
        "SELECT has_sequence_privilege('{{table:row_lock_tokens}}', 'USAGE')::int AS ok",
    .identity = "SELECT current_user AS user_name, current_schema() AS schema_name",
    .schema_privileges =
        "SELECT has_schema_privilege({{param:schema}}::text, 'USAGE')::int AS usage,"
        " has_schema_privilege({{param:schema}}::text, 'CREATE')::int AS create",
    .owner =
        "SELECT pg_has_role(c.relowner, 'USAGE')::int AS ok FROM pg_class c"
        " WHERE c.oid = to_regclass('{{target}}')",
};

#undef DBLOCK_QUEUE_HEAD
#undef DBLOCK_PERMIT_OWNER
#undef DBLOCK_LISTED_ROWS

constexpr ServerSql kPostgreSQL = {
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

const ServerSql& postgresql_sql() { return kPostgreSQL; }

}  // namespace dblock::detail
