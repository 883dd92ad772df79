-- The history of holds (opt-in, docs/operations/history.md): one row per ended tenure of a
-- unique-key lock, written by triggers on the lock table that `dblock history enable` creates
-- (and `dblock history disable` drops). This migration adds only the table, so a database
-- that never enables history pays nothing but an empty table.
--
-- ended_at is DATETIME(6) in UTC on the database clock: the statement's time for a release, the
-- row's expiry for a hold that ran out (taken over, re-acquired, cleaned). ended_how is one of
-- released, force_released, expired, taken_over, cleaned. Keys and owners compare byte for byte,
-- as in the lock table. The cleaner prunes rows older than its history retention, oldest first
-- (ended_at_idx); `dblock history KEY` reads a key's newest first (key_ended_at_idx).
CREATE TABLE IF NOT EXISTS {{table:history}} (
    id            BIGINT          NOT NULL AUTO_INCREMENT,
    lock_key      VARBINARY(1020) NOT NULL,
    fencing_token BIGINT          NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    acquired_at   DATETIME(6)     NOT NULL,
    ended_at      DATETIME(6)     NOT NULL,
    ended_how     VARCHAR(16)     NOT NULL,
    PRIMARY KEY (id),
    KEY key_ended_at_idx (lock_key, ended_at),
    KEY ended_at_idx (ended_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
