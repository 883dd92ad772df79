// SPDX-License-Identifier: Apache-2.0
// Every SQL statement dblock sends, per server, grouped by the code that sends them:
// lib/src/sql/postgresql.cpp and lib/src/sql/mysql.cpp each hold the whole set for one database,
// to be reviewed as a whole; lib/src/sql/mariadb.cpp holds the few statements where MariaDB
// takes its own (the rest of its set is MySQL's). A statement for MySQL 8.0 alone is changed in
// mysql.cpp, or added to the MariaDB overrides when MariaDB must keep the old one.
//
// Statements are templates: {{table:x}} becomes the schema-qualified, quoted name of table
// prefix+x, {{name:x}} the quoted name prefix+x, {{schema}} the quoted schema name, and
// {{relaxed:text}} becomes text only when rendered for relaxed durability, and {{fair}} ...
// {{/fair}} encloses text (placeholders included) kept only when rendered for a fair lock (see
// render_sql). Values
// are always bound parameters ($n on PostgreSQL, ? on MySQL), never spliced.
//
// Thread-safety: read-only data and pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

// Each owner's statements (see the .cpp files for each statement's parameters and columns).

// The migrator. Statements (statement.hpp) bound from lock, timeout_s, qualified (the quoted
// migrations table), schema (NULL: the current one), table, version, name, checksum.
struct MigratorSql {
  std::string_view create_schema;  // {{schema}}
  std::string_view lock;           // one row, column "got"
  std::string_view unlock;         // empty when the lock ends at COMMIT
  bool in_one_transaction;         // DDL is transactional
  std::string_view isolation;      // the transaction's first statement; empty: none
  std::string_view table_exists;   // column "present"
  std::string_view create_table;
  std::string_view select;  // columns: version, name, checksum, applied_at
  std::string_view insert;
  // A Galera cluster's migration lock (galera_migration_lock.hpp): a row of the migrations table
  // with version 0, which select leaves out. Empty where the lock above serves every server.
  std::string_view cluster_lock;        // params: holder (32 hex digits), name
  std::string_view cluster_unlock;      // params: holder
  std::string_view cluster_lock_stale;  // params: age_s; deletes a holder's row that old
};

// What a session is set to (isolation.hpp, galera.hpp): each answers in the last column of the
// first row (last_column()).
struct SessionSql {
  std::string_view isolation;  // the session's default isolation level
  // MySQL dialect: "ON" on a Galera node (empty elsewhere).
  std::string_view galera_check;
  // MySQL dialect: the session's wsrep_sync_wait (empty elsewhere).
  std::string_view galera_sync_wait;
  // PostgreSQL: sets the server's TCP keepalive for this session from $1 (idle seconds), $2
  // (seconds between probes) and $3 (probes), and its TCP_USER_TIMEOUT from $4 (milliseconds),
  // as text (empty elsewhere: MySQL has no such session settings).
  std::string_view server_keepalive;
};

// The unique-key lock. PostgreSQL returns rows (RETURNING); MySQL carries one value back in
// LAST_INSERT_ID().
//
// Lock-delay (LockOptions::lock_delay): every statement that sets a holder's expiry (acquire,
// hand_over, renew) also takes lock_delay_ms (hand_over: the waiter's, to_lock_delay_ms) and
// stores now + ttl_ms + lock_delay_ms, so acquirers, the cleaner and listings, which read a row
// with expires_at <= now as free, keep the key taken for the delay after the TTL. The statements
// about the holder's own hold (release, release_rest, hand_over, renew, fence) take the holder's
// lock_delay_ms and find the hold only while expires_at > now + lock_delay_ms: once the TTL ran
// out, the holder can no longer renew, release or hand the key over, so nothing cuts the delay
// short but an operator's release.
struct UniqueKeySql {
  bool results_in_rows;
  // Where results come back through LAST_INSERT_ID(expr) (MySQL, MariaDB): the session's
  // LAST_INSERT_ID(), column "id". A trigger on the lock table (the history of holds) makes the
  // server leave the value out of the reply (it clears the flag behind it after each statement the
  // trigger runs) while the session keeps it, so a reply that must carry a value and says 0 is
  // asked again with this (UniqueKeyLockCore::returned). Empty where results come in rows.
  std::string_view reread_id;
  // The release's LAST_INSERT_ID() is the remaining hold count plus one (never 0 for a matched
  // row, so a lost value is told from "free now").
  bool release_count_plus_one;
  std::string_view acquire;
  bool acquire_leaves_queue;  // see fair waiting below
  bool acquire_joins_queue;   // see fair waiting below
  // Rendered for a fair lock where releases notify (PostgreSQL), a release that would free the
  // key may grant it to the queue's head instead (migration 0011): one row with hold_count 0, the
  // head in "head", and the new token in "granted" and the head's sent_us in "sent_us" (both
  // NULL when the release did not grant).
  std::string_view release;
  std::string_view release_rest;  // frees the holds left by acquires whose reply was lost
  // Hands a held key straight to a waiter of this process: the release of the holder's only hold
  // (key, host, process, thread, token, lock_delay_ms) and the waiter's acquire (to_lease_id,
  // to_host, to_process, to_thread, ttl_ms, to_lock_delay_ms, metadata) in one statement, one
  // commit, with a new fencing token. One row matched when handed over; the token in column
  // "fencing_token" or LAST_INSERT_ID(). No row when the holder's lease is gone or holds more than
  // one hold, unless any_holds is 1: the holder knows no live lease of its own shares the row, so
  // its other holds are those of acquires whose reply was lost, or of a hand-off it re-entered
  // (hand_off). A retry after a lost reply finds the row already carrying the waiter's lease id and
  // reports that token again. Sends no notification: the key never comes free. Rendered for a fair
  // lock, also to_waiter_id: hands over only when that waiter heads the key's queue (where
  // acquire_leaves_queue, the statement also deletes its place).
  std::string_view hand_over;
  std::string_view renew;
  std::string_view claim;
  // Fair waiting (the lock_waiters table). Rendered for a fair lock, acquire also takes seq (the
  // waiter's place, NULL when not queued) and waiter_id (NULL when not queued): a fair acquire of
  // a free key takes it only when no live waiter registered before seq (any live waiter, when
  // NULL) is queued, unless the owner holds the key already (re-entry); the waiter's own place
  // (waiter_id) never counts against it. Where acquire_leaves_queue, an acquire that gets the
  // key also deletes the waiter's place. Where acquire_joins_queue, acquire also takes
  // join_ttl_ms: when not NULL, a refused acquire registers waiter_id as enqueue does (with that
  // TTL, and sent_us) and returns one row with a NULL fencing_token and the place in column
  // "seq"; a row that holds the key has a NULL "seq".
  // Where acquire cannot carry that check (MySQL, whose acquire is INSERT ... VALUES), fair_check
  // asks it first: one row, column "wait", 1 when the caller must keep waiting, and "ahead", how
  // many live waiters are queued before it (same parameters as acquire); empty where acquire
  // checks.
  std::string_view fair_check;
  // Statements: key, waiter_id, host, process, thread, ttl_ms (the place's), and the lease a
  // release may grant: lease_ttl_ms, lock_delay_ms, metadata, sent_us (the waiter's clock when it
  // sent this). Registers the waiter (or, for a waiter_id already queued, refreshes its expiry and
  // lease and keeps its place); the seq in rows (column "seq") or LAST_INSERT_ID().
  std::string_view enqueue;
  // waiter_id, channel, key, host, process, thread: the waiter leaves the queue; where releases
  // notify (PostgreSQL), a head that leaves a free key notifies the next live waiter as a release
  // would, and a waiter granted the key it did not take frees it.
  std::string_view leave;
  // Hand-offs to a candidate of another process (Election::hand_off; migration 0010). offer:
  // key, waiter_id, host, process, thread, place_ttl_ms (how long the registration lasts
  // unrefreshed), ttl_ms, lock_delay_ms, metadata (the lease a hand-off gives the candidate):
  // registers the candidate, or refreshes its registration (leave withdraws it). candidate: key,
  // host, process, thread (the holder, never its own candidate), to_thread (a candidate's name,
  // the owner_thread it campaigns as; NULL: any): the live registration of the key with a lease,
  // the earliest registered first, as columns waiter_id,
  // owner_host, owner_process, owner_thread, ttl_ms, lock_delay_ms and metadata (text; NULL for
  // none); no row when there is none. The hand-off itself is hand_over (not rendered fair), to a
  // lease id the holder makes up: the candidate's next acquire re-enters the hold as its owner.
  // wake: key, channel: tells the key's waiters to try now (where releases notify; empty
  // elsewhere, where they poll).
  std::string_view offer;
  std::string_view candidate;
  std::string_view wake;
  // Fencing (dblock/fence.hpp), sent inside the caller's transaction: key, host, process, thread,
  // token. One row (column "fencing_token") while the lease is held and unexpired on the
  // statement's clock, and the row share-locked until the transaction ends, so that no takeover,
  // release or cleaner can change it before; no row when the lease is gone.
  std::string_view fence;
};

// The counting semaphore (the semaphores and semaphore_permits tables), and the reader-writer
// lock built on it. Statements bound from key, permits (the caller's limit), lease_id, host,
// process, thread, ttl_ms, lock_delay_ms (as in UniqueKeySql: expiries carry it, and a permit's
// own statements find it held only while expires_at > now + lock_delay_ms), metadata, slot,
// token, release_id; an acquire also from first and last (the slots it may take, below the
// limit) and blocked_by (a slot whose live permit refuses it; -1: none). A permit's fencing token
// is slot + 1024 x the database clock in µs, raised past the slot's previous token, so token % 1024
// is the slot.
struct SemaphoreSql {
  // Where the acquire picks a free slot itself (PostgreSQL): one row, columns "permits" (the
  // key's stored limit; NULL when it has none yet), "free" (how many slots the statement saw
  // free), "slot" and "fencing_token" (NULL unless a permit was taken). A slot of this lease id
  // that is still held is taken again (a retry after a lost reply); free > 0 with no permit: a
  // concurrent acquire took the slot picked.
  std::string_view acquire;
  // Where the acquire is given its slot (MySQL, whose INSERT ... VALUES cannot choose one):
  // `slots` reads the key's state as rows of columns "kind" and "n": kind "limit" (n: the stored
  // limit; no such row when none is stored), "taken" (n: a slot held by another lease), "mine"
  // (n: a slot this lease id still holds). acquire_slot then takes `slot`: LAST_INSERT_ID() =
  // the token, 0 when the slot was taken meanwhile. Empty where acquire picks.
  std::string_view slots;
  std::string_view acquire_slot;
  // Stores the key's limit when it has none (define), or sets it (set_limit).
  std::string_view define;
  std::string_view set_limit;
  // Owner-, lease- and token-checked; release frees the slot (one row matched when it was
  // held; a retry with the same release id matches the row its first attempt freed), renew
  // extends it (one row matched when still held). Where releases notify (PostgreSQL), release
  // returns a row per row matched and NOTIFYs `channel` (unless empty) when it freed the slot.
  std::string_view release;
  std::string_view renew;
  // Fencing, as UniqueKeySql::fence, for a permit: key, slot, token, lease_id, host, process,
  // thread.
  std::string_view fence;
  // The reader-writer lock's fence (docs/locks/fencing.md). fence_exclusive: as fence, with the
  // row locked exclusively (a writer's slot 0, which a reader's admission share-locks).
  // live_in_shared (a reader's look at slot 0) and live_in_exclusive (a writer's look at the
  // reader slots): column "n", the key's live permits in slots `first` to `last`; every row of
  // the key in that range is locked first, shared or exclusive, whatever its expiry, so the
  // statement waits for a fenced transaction that holds the other kind of lock on one of them (and
  // then reads the row as that transaction left it). Sent in autocommit: the locks end with the
  // statement.
  std::string_view fence_exclusive;
  std::string_view live_in_shared;
  std::string_view live_in_exclusive;
  // Why a permit was found gone (LeaseCore::why_not_held), read by the primary key, only on the
  // loss path: key, slot, token, lease_id, and first and last, the slots whose holders the
  // permit's hold excluded besides its own (a writer's: the reader slots; a reader's: slot 0;
  // first > last: none). One row: column "taken", the live permits (unexpired, not released: a
  // lease id not starting with 'r-') in its own slot under another token or in first to last;
  // "mine", 1 when its own row (slot, token, lease id) is still there, not released.
  std::string_view loss;
};

// The cleaner. Each statement is one autocommit statement.
// A table the cleaner empties of rows no longer in use. Statements (statement.hpp) bound from
// grace_ms and limit; the history's from retention_ms (CleanOptions::history_retention) instead
// of grace_ms.
struct CleanedTable {
  std::string_view base;        // the table's name without the prefix
  std::string_view delete_sql;  // deletes up to `limit` rows unused for longer than the grace
  std::string_view count_sql;   // column "n": how many delete_sql would take, at most `limit`
  // For a table whose rows are unused only while another table has no row of their key (a
  // semaphore's limit, while no permit row of the key exists): one statement would decide that
  // from a snapshot taken before a permit committed by an acquire that held the row just before.
  // When set, a batch is one transaction at READ COMMITTED: lock_sql (grace_ms, limit) locks up
  // to `limit` such rows, skipping rows others have locked, and returns their keys (column
  // "lock_key"); then delete_sql (parameter keys: the keys as a JSON array of strings) deletes,
  // on a snapshot taken after the locks, those still unused.
  std::string_view lock_sql = {};
};

struct CleanerSql {
  // Every table of dblock's schema that keeps rows per key, in the order the cleaner visits
  // them; `dblock doctor` checks the privileges on each.
  std::span<const CleanedTable> tables;
  std::string_view locks_oldest;  // column "oldest": the oldest expires_at that has passed
};

// The row lock. Lock statements run inside the lease's transaction. {{seconds}} /
// {{max_seconds}} / {{ms}} are filled in with numbers by the strategy before rendering (the
// servers take no parameter there).
struct RowLockSql {
  std::string_view exists;       // asked before create (empty: never)
  std::string_view create;       // creates the key's row if missing
  std::string_view set_timeout;  // empty when the wait statement carries its timeout
  // MySQL 8.0 only: set the session's lock wait ({{seconds}}) before a bounded wait, and reset it
  // after (empty elsewhere).
  std::string_view session_wait;
  std::string_view session_wait_reset;
  std::string_view try_lock;  // NOWAIT
  std::string_view wait;      // waits (after set_timeout or session_wait)
  std::string_view stamp;     // empty when the lock statement stamps the row itself
  // A row of the caller's own table by primary key: {{target}} and {{column}} are the quoted
  // table and column; one row, column "found", when the row exists and is locked.
  std::string_view target_try;
  std::string_view target_wait;
};

// The session lock: a native lock held by the lease's session (PostgreSQL advisory lock, MySQL
// GET_LOCK), named by {{param:lock}} (PostgreSQL: a bigint; MySQL: a lock name). The lock
// statements answer one row, column "fencing_token": the token when the lock was taken, NULL
// when another session holds it (or, MySQL, the wait ran out). Every statement is autocommit.
struct SessionLockSql {
  std::string_view try_lock;
  // Waits up to {{param:timeout}}: PostgreSQL a lock_timeout as text ('300ms'; '0' forever),
  // MySQL seconds (fractional where fractional_wait; forever is sent as about 34 years, since
  // MariaDB answers a negative timeout with NULL at once).
  std::string_view wait;
  // GET_LOCK takes fractional seconds (MariaDB). MySQL 8.0 reads its timeout as an integer
  // (a fraction rounds to the nearest second), so the strategy waits the whole seconds and tries
  // again until the sub-second rest is over.
  bool fractional_wait;
  // A wait that runs out: PostgreSQL fails it (lock_timeout), MySQL answers NULL.
  std::string_view release;     // column "released": true/1 when this session held the lock
  std::string_view unlock_all;  // frees every session lock of the connection
};

// Optimistic versions / compare-and-set.
struct VersionSql {
  std::string_view read;    // column "version"; no row when the key has none yet
  std::string_view create;  // creates the key's row if missing
  std::string_view cas;     // moves the version on when it still is the one read
};

// The operators' commands (`dblock locks`, `dblock release`).
struct OperatorSql {
  std::string_view list;         // columns as in `dblock locks --json`
  std::string_view list_prefix;  // list, only keys starting with a prefix
  std::string_view row;          // list, only the key given (by the primary key)
  std::string_view release;      // frees a row still carrying the lease and token read
  // Columns "key" and "n": the live fair waiters queued per key (keys with none left out).
  std::string_view waiters;
  // A Statement: prefix ("" for all). waiters for the keys that start with the prefix, ordered
  // by key, plus the head of each key's queue (its live waiter with the lowest seq, the one a
  // release hands the key to): columns "head_host", "head_process", "head_thread" and
  // "head_since" (when it joined, UTC ISO 8601 as list's times).
  std::string_view waiter_queues;
  // Column "now": the database clock that list's "expired" is read against, UTC ISO 8601 as
  // list's times.
  std::string_view now;
  // A Statement: prefix ("" for all). Columns as list, plus "slot" and "permits" (the key's
  // limit): the semaphore permits held or expired and not yet cleaned whose key starts with the
  // prefix, ordered by key and slot.
  std::string_view permits;
  // A Statement: key, slot, lease_id, token (as an operator read them). Frees the permit as its
  // holder's release would (expires now; the lease id marked released, so the holder's renewal
  // and release match nothing), only while it still carries that lease and token. One affected
  // row when it freed the permit.
  std::string_view release_permit;
};

// The history of holds (dblock/history.hpp; the table is migration 0009's). Triggers on the
// lock table write one row per ended tenure into the history table; `enable` creates them and
// `disable` drops them, so that with history off no statement does any work for it. What
// ended a tenure is read from the row's change (see the .cpp files, and docs/internals/sql.md).
struct HistoryStep {
  // A trigger's base name (the prefix is added) when the step creates that trigger and is
  // skipped where it exists already (a dialect whose DDL is not transactional); empty: the step
  // always runs.
  std::string_view trigger;
  std::string_view sql;
};

struct HistorySql {
  // Why this server cannot record the history (enable_history() refuses with it); empty where it
  // can.
  std::string_view unavailable;
  // The base names of the triggers enable creates (the prefix is added), all on the lock table.
  std::span<const std::string_view> triggers;
  // Rows, column "name": which of the triggers named by the parameters first and second (their
  // full names) exist on the lock table; schema (NULL: the current one), qualified (the quoted
  // lock table).
  std::string_view present;
  // enable's and disable's steps, in order; in one transaction where in_one_transaction (DDL is
  // transactional, so an enable replaces the triggers at once and two enables wait for each
  // other), else one by one in autocommit.
  bool in_one_transaction;
  std::span<const HistoryStep> enable;
  std::span<const HistoryStep> disable;
  // Statements: key, since_ms (NULL: no bound; else rows ended within that long before the
  // database clock's now), limit. Columns "key", "fencing_token", "owner_host", "owner_process",
  // "owner_thread", "acquired_at", "ended_at" (UTC ISO 8601 as list's times), "ended_how";
  // newest first.
  std::string_view read;
};

// `dblock doctor` (doctor.cpp). Reads only.
struct DoctorSql {
  std::string_view server;
  std::string_view writable;
  std::string_view replication;
  std::string_view time_zone;
  std::string_view clock;
  // Privilege probes of {{target}} (a quoted table) and its {{column}}: they touch no row, yet
  // the server checks the privilege as for any other statement.
  std::string_view probe_select;
  std::string_view probe_insert;
  std::string_view probe_update;
  std::string_view probe_delete;
  // MySQL dialect: CREATE and ALTER on an existing {{target}}; no-ops (empty on PostgreSQL,
  // where creating needs the schema's CREATE and altering ownership: see below).
  std::string_view probe_create;
  std::string_view probe_alter;
  std::string_view sequence_usage;  // PostgreSQL only (empty elsewhere)
  // Columns "user_name" and "schema_name": who the session is (MySQL: CURRENT_USER(),
  // user@host) and its current schema / database, for the GRANTs the doctor advises.
  std::string_view identity;
  // PostgreSQL only: columns "usage" and "create", 1 when this role has that privilege on the
  // schema named by {{param:schema}}.
  std::string_view schema_privileges;
  // PostgreSQL only: column "ok", 1 when this role owns {{target}} (or is a member of its
  // owner), as ALTER and CREATE INDEX need; no row when there is no such table or sequence.
  std::string_view owner;
};

// Every statement for one server.
struct ServerSql {
  MigratorSql migrator;
  SessionSql session;
  UniqueKeySql unique_key;
  SemaphoreSql semaphore;
  CleanerSql cleaner;
  RowLockSql row_lock;
  SessionLockSql session_lock;
  VersionSql versions;
  OperatorSql operators;
  HistorySql history;
  DoctorSql doctor;
};

// postgresql.cpp, mysql.cpp, and mariadb.cpp (MySQL's set with MariaDB's own statements where
// it has better ones).
const ServerSql& server_sql(Server server);

// The value in the last column of the first row, or "" when there is none: where the statements
// that answer with a setting (SessionSql) put it.
std::string last_column(const Result& r);

// Replaces every `marker` in `text` with `value` (for the numeric and caller-identifier
// placeholders some statements carry besides render_sql's).
std::string replace_all(std::string text, std::string_view marker, std::string_view value);

// Expands {{table:x}}, {{name:x}} and {{schema}} in a statement or migration template, and
// {{relaxed:text}} to text when `relaxed_durability` is set (to nothing otherwise), and keeps what
// lies between {{fair}} and {{/fair}} only when `fair` is set (placeholders there are rendered,
// and their parameters bound, only then). With `parameters`, also {{param:name}} (see Statement
// in statement.hpp), appending the name of each bound position to it. Throws
// Error(kInvalidArgument) for an unknown or unterminated placeholder or {{fair}} section, or
// {{schema}} without a schema.
std::string render_sql(std::string_view templ, Dialect dialect, const TableNames& names,
                       bool relaxed_durability = false,
                       std::vector<std::string>* parameters = nullptr, bool fair = false);

}  // namespace dblock::detail

#pragma GCC visibility pop
