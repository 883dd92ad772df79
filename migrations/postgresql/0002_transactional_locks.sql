-- Row locks: one row per lock key, created on first use and locked with SELECT ... FOR UPDATE by
-- the transaction that holds the lock. The owner columns and fencing_token describe the latest
-- acquisition; the row lock itself is the lock.
CREATE TABLE IF NOT EXISTS {{table:row_locks}} (
    lock_key      varchar(255) NOT NULL PRIMARY KEY,
    owner_host    varchar(255) NOT NULL DEFAULT '',
    owner_process varchar(255) NOT NULL DEFAULT '',
    owner_thread  varchar(255) NOT NULL DEFAULT '',
    fencing_token bigint       NOT NULL DEFAULT 0,  -- strictly increasing per key
    used_at       timestamptz  NOT NULL             -- creation or latest acquisition
);
CREATE INDEX IF NOT EXISTS {{name:row_locks_used_at_idx}} ON {{table:row_locks}} (used_at);

-- Optimistic versions: one row per key. A commit under the key moves version forward with
-- compare-and-set; versions come from the database clock, so a row deleted and created again
-- never repeats a version an old reader saw.
CREATE TABLE IF NOT EXISTS {{table:versions}} (
    lock_key   varchar(255) NOT NULL PRIMARY KEY,
    version    bigint       NOT NULL,
    updated_at timestamptz  NOT NULL
);
CREATE INDEX IF NOT EXISTS {{name:versions_updated_at_idx}} ON {{table:versions}} (updated_at);
