-- The lock table: one row per lock key that is held or was held and not yet cleaned.
-- Expiry is always computed from the server clock; timestamps are timestamptz.
CREATE TABLE IF NOT EXISTS {{table:locks}} (
    lock_key      varchar(255) NOT NULL PRIMARY KEY,
    lease_id      varchar(64)  NOT NULL,    -- random per acquisition; lets a retry recognise itself
    owner_host    varchar(255) NOT NULL,
    owner_process varchar(255) NOT NULL,    -- process instance (pid + start identity)
    owner_thread  varchar(255) NOT NULL,    -- OS thread id, or the caller's explicit owner
    hold_count    integer      NOT NULL DEFAULT 1,  -- reentrant acquisitions by the owner
    fencing_token bigint       NOT NULL,    -- strictly increasing per key
    acquired_at   timestamptz  NOT NULL,
    expires_at    timestamptz  NOT NULL,
    metadata      jsonb
);

-- The cleaner deletes expired rows in expires_at order.
CREATE INDEX IF NOT EXISTS {{name:locks_expires_at_idx}} ON {{table:locks}} (expires_at);
