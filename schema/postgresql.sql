-- dblock's full current schema for PostgreSQL, for those who apply DDL with their own tool.
-- Equivalent to applying every file in migrations/postgresql/ with the default "dblock_" prefix
-- (a test compares the two catalogs). Tables are created in the current schema (search_path).
-- If you apply this file yourself, do not also run `dblock migrate up` on the same tables.

CREATE TABLE IF NOT EXISTS dblock_locks (
    lock_key      varchar(255) NOT NULL PRIMARY KEY,
    lease_id      varchar(64)  NOT NULL,
    owner_host    varchar(255) NOT NULL,
    owner_process varchar(255) NOT NULL,
    owner_thread  varchar(255) NOT NULL,
    hold_count    integer      NOT NULL DEFAULT 1,
    fencing_token bigint       NOT NULL,
    acquired_at   timestamptz  NOT NULL,
    expires_at    timestamptz  NOT NULL,
    metadata      jsonb
);
CREATE INDEX IF NOT EXISTS dblock_locks_expires_at_idx ON dblock_locks (expires_at);

-- Row locks: one row per lock key, created on first use and locked with SELECT ... FOR UPDATE by
-- the transaction that holds the lock. The owner columns and fencing_token describe the latest
-- acquisition; the row lock itself is the lock.
CREATE TABLE IF NOT EXISTS dblock_row_locks (
    lock_key      varchar(255) NOT NULL PRIMARY KEY,
    owner_host    varchar(255) NOT NULL DEFAULT '',
    owner_process varchar(255) NOT NULL DEFAULT '',
    owner_thread  varchar(255) NOT NULL DEFAULT '',
    fencing_token bigint       NOT NULL DEFAULT 0,  -- strictly increasing per key
    used_at       timestamptz  NOT NULL             -- creation or latest acquisition
);
CREATE INDEX IF NOT EXISTS dblock_row_locks_used_at_idx ON dblock_row_locks (used_at);
-- Row-lock fencing tokens: nextval() is never rolled back, so a token handed to a lease whose
-- transaction rolled back is never handed out again. Starts above every token stamped so far.
CREATE SEQUENCE IF NOT EXISTS dblock_row_lock_tokens AS bigint;
SELECT setval('dblock_row_lock_tokens', GREATEST(
    (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
    (SELECT COALESCE(max(fencing_token), 0) FROM dblock_row_locks) + 1));

-- Optimistic versions: one row per key. A commit under the key moves version forward with
-- compare-and-set; versions come from the database clock, so a row deleted and created again
-- never repeats a version an old reader saw.
CREATE TABLE IF NOT EXISTS dblock_versions (
    lock_key   varchar(255) NOT NULL PRIMARY KEY,
    version    bigint       NOT NULL,
    updated_at timestamptz  NOT NULL
);
CREATE INDEX IF NOT EXISTS dblock_versions_updated_at_idx ON dblock_versions (updated_at);
