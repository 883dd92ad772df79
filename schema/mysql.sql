-- dblock's full current schema for MySQL 8.0+ and MariaDB 10.6+, for those who apply DDL with
-- their own tool. Equivalent to applying every file in migrations/mysql/ with the default
-- "dblock_" prefix (a test compares the two catalogs). Tables go into the current database.
-- If you apply this file yourself, do not also run `dblock migrate up` on the same tables.

CREATE TABLE IF NOT EXISTS dblock_locks (
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
