-- Counting semaphores: a key's limit (how many permits it has), and one row per permit slot
-- (0 to permits - 1) that has ever been taken. A permit is a lease: held while expires_at lies
-- ahead, free once it has passed (release sets it to now); the cleaner deletes rows long past
-- it, and then the limit of a key left without permit rows. Every Semaphore on a key must ask
-- for the same number of permits, or change it with Semaphore::set_limit. Keys, ids
-- and owners compare byte for byte, as in the lock table.
CREATE TABLE IF NOT EXISTS {{table:semaphores}} (
    lock_key   VARBINARY(1020) NOT NULL,
    permits    INT             NOT NULL,
    changed_at DATETIME(6)     NOT NULL,
    PRIMARY KEY (lock_key),
    KEY changed_at_idx (changed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS {{table:semaphore_permits}} (
    lock_key      VARBINARY(1020) NOT NULL,
    slot          INT             NOT NULL,
    lease_id      VARBINARY(256)  NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    fencing_token BIGINT          NOT NULL,  -- slot + 1024 x (µs of the clock, raised per slot)
    acquired_at   DATETIME(6)     NOT NULL,
    expires_at    DATETIME(6)     NOT NULL,
    metadata      JSON            NULL,
    PRIMARY KEY (lock_key, slot),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
