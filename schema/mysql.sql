-- SPDX-License-Identifier: Apache-2.0
-- dblock's full current schema for MySQL 8.0+ and MariaDB 10.6+, for those who apply DDL with
-- their own tool. Equivalent to applying every file in migrations/mysql/ with the default
-- "dblock_" prefix (a test compares the two catalogs). Tables go into the current database.
-- If you apply this file yourself, do not also run `dblock migrate up` on the same tables.

CREATE TABLE IF NOT EXISTS dblock_locks (
    lock_key      VARBINARY(1020) NOT NULL,  -- 255 characters of UTF-8, compared byte for byte
    lease_id      VARBINARY(256)  NOT NULL,  -- ids and owners compare byte for byte too:
    owner_host    VARBINARY(1020) NOT NULL,  -- "w" and "w " are two owners
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    hold_count    INT          NOT NULL DEFAULT 1,
    fencing_token BIGINT       NOT NULL,
    acquired_at   DATETIME(6)  NOT NULL,
    expires_at    DATETIME(6)  NOT NULL,
    metadata      JSON         NULL,
    previous_lease_id VARBINARY(256) NULL,  -- the lease or release id of the tenure before
    PRIMARY KEY (lock_key),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Row locks: one row per lock key, created on first use and locked with SELECT ... FOR UPDATE by
-- the transaction that holds the lock. The owner columns and fencing_token describe the latest
-- acquisition; the row lock itself is the lock. Keys and owners compare byte for byte, as in the
-- lock table.
CREATE TABLE IF NOT EXISTS dblock_row_locks (
    lock_key      VARBINARY(1020) NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL DEFAULT '',
    owner_process VARBINARY(1020) NOT NULL DEFAULT '',
    owner_thread  VARBINARY(1020) NOT NULL DEFAULT '',
    fencing_token BIGINT       NOT NULL DEFAULT 0,
    used_at       DATETIME(6)  NOT NULL,
    PRIMARY KEY (lock_key),
    KEY used_at_idx (used_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Optimistic versions: one row per key. A commit under the key moves version forward with
-- compare-and-set; versions come from the database clock, so a row deleted and created again
-- never repeats a version an old reader saw.
CREATE TABLE IF NOT EXISTS dblock_versions (
    lock_key   VARBINARY(1020) NOT NULL,
    version    BIGINT       NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (lock_key),
    KEY updated_at_idx (updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Fair waiting (unique-key lock with fair = true): one row per waiter, in order of arrival
-- (seq); only the first live waiter of a key may take it. Registrations expire like leases.
-- An election's candidates register here too, with the lease a hand-off gives them (ttl_ms,
-- lock_delay_ms, metadata; NULL for a fair waiter here, which polls). refreshed_at and sent_us
-- serve PostgreSQL's grants and stay NULL here.
CREATE TABLE IF NOT EXISTS dblock_lock_waiters (
    seq           BIGINT          NOT NULL AUTO_INCREMENT,
    waiter_id     VARBINARY(256)  NOT NULL,
    lock_key      VARBINARY(1020) NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    registered_at DATETIME(6)     NOT NULL,
    expires_at    DATETIME(6)     NOT NULL,
    ttl_ms        BIGINT          NULL,
    lock_delay_ms BIGINT          NULL,
    metadata      JSON            NULL,
    refreshed_at  DATETIME(6)     NULL,
    sent_us       BIGINT          NULL,
    PRIMARY KEY (seq),
    UNIQUE KEY waiter_id_idx (waiter_id),
    KEY key_seq_idx (lock_key, seq),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Counting semaphores (Semaphore): each key's limit, and one row per permit slot taken; a
-- permit is held while expires_at lies ahead.
CREATE TABLE IF NOT EXISTS dblock_semaphores (
    lock_key   VARBINARY(1020) NOT NULL,
    permits    INT             NOT NULL,
    changed_at DATETIME(6)     NOT NULL,
    PRIMARY KEY (lock_key),
    KEY changed_at_idx (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS dblock_semaphore_permits (
    lock_key      VARBINARY(1020) NOT NULL,
    slot          INT             NOT NULL,
    lease_id      VARBINARY(256)  NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    fencing_token BIGINT          NOT NULL,
    acquired_at   DATETIME(6)     NOT NULL,
    expires_at    DATETIME(6)     NOT NULL,
    metadata      JSON            NULL,
    previous_lease_id VARBINARY(256) NULL,
    PRIMARY KEY (lock_key, slot),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The live leases, for services on the same database that check a fencing token in their own
-- transaction: merged into the caller's statement, so LOCK IN SHARE MODE on a view locks the base
-- row (docs/locks/fencing.md).
CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW dblock_live_locks AS
    SELECT lock_key, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM dblock_locks
    WHERE hold_count > 0 AND expires_at > UTC_TIMESTAMP(6);
CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW dblock_live_permits AS
    SELECT lock_key, slot, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM dblock_semaphore_permits
    WHERE expires_at > UTC_TIMESTAMP(6);

-- The history of holds (opt-in): one row per ended tenure of a unique-key lock. This file creates
-- the table only; the triggers that fill it are created by `dblock history enable`
-- (docs/operations/history.md). ended_how: released, force_released, expired, taken_over, cleaned.
CREATE TABLE IF NOT EXISTS dblock_history (
    id            BIGINT          NOT NULL AUTO_INCREMENT,
    lock_key      VARBINARY(1020) NOT NULL,
    fencing_token BIGINT          NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    acquired_at   DATETIME(6)     NOT NULL,
    ended_at      DATETIME(6)     NOT NULL,  -- UTC, database clock
    ended_how     VARCHAR(16)     NOT NULL,
    PRIMARY KEY (id),
    KEY key_ended_at_idx (lock_key, ended_at),
    KEY ended_at_idx (ended_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
