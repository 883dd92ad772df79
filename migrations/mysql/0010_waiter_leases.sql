-- What a hand-off gives a waiter: a registered waiter (an election's candidate) publishes the
-- lease it would hold, so that the holder can move the key to it in one statement (a new fencing
-- token, the waiter as owner, its TTL, lock-delay and metadata) without the waiter's process
-- taking part. NULL in a fair waiter's place, which only queues.
-- MySQL 8.0 has no ADD COLUMN IF NOT EXISTS: a column found there already (a migrator that
-- stopped before recording this migration, or one on another Galera node) counts as added.
ALTER TABLE {{table:lock_waiters}} ADD COLUMN ttl_ms BIGINT NULL;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN lock_delay_ms BIGINT NULL;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN metadata JSON NULL;
