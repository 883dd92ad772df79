-- The lock table: one row per lock key that is held or was held and not yet cleaned.
-- Times are DATETIME(6) in UTC, always computed with UTC_TIMESTAMP(6) on the server (never
-- TIMESTAMP, which follows the session time zone). Keys are VARBINARY: compared byte for byte,
-- trailing spaces included (a PAD SPACE collation would make "k" and "k " the same lock).
CREATE TABLE IF NOT EXISTS {{table:locks}} (
    lock_key      VARBINARY(1020) NOT NULL,  -- 255 characters of UTF-8, compared byte for byte
    lease_id      VARCHAR(64)  NOT NULL,
    owner_host    VARCHAR(255) NOT NULL,
    owner_process VARCHAR(255) NOT NULL,
    owner_thread  VARCHAR(255) NOT NULL,
    hold_count    INT          NOT NULL DEFAULT 1,
    fencing_token BIGINT       NOT NULL,
    acquired_at   DATETIME(6)  NOT NULL,
    expires_at    DATETIME(6)  NOT NULL,
    metadata      JSON         NULL,
    PRIMARY KEY (lock_key),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
