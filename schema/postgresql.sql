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
