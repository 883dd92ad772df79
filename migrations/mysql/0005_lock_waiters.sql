-- Fair waiting for the unique-key lock: one row per waiter of a fair lock, in order of arrival
-- (seq). Only the first live waiter of a key may take it. A waiter's registration is a lease
-- too: refreshed while it waits, and a waiter that died drops out once expires_at passes (the
-- cleaner deletes such rows). A registration sent again after a lost reply carries the same
-- waiter_id and finds the first one instead of queueing twice. Keys, ids and owners compare
-- byte for byte, as in the lock table.
CREATE TABLE IF NOT EXISTS {{table:lock_waiters}} (
    seq           BIGINT          NOT NULL AUTO_INCREMENT,  -- arrival order
    waiter_id     VARBINARY(256)  NOT NULL,
    lock_key      VARBINARY(1020) NOT NULL,
    owner_host    VARBINARY(1020) NOT NULL,
    owner_process VARBINARY(1020) NOT NULL,
    owner_thread  VARBINARY(1020) NOT NULL,
    registered_at DATETIME(6)     NOT NULL,
    expires_at    DATETIME(6)     NOT NULL,
    PRIMARY KEY (seq),
    UNIQUE KEY waiter_id_idx (waiter_id),
    KEY key_seq_idx (lock_key, seq),
    KEY expires_at_idx (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
