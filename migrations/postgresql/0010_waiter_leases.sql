-- What a hand-off gives a waiter: a registered waiter (an election's candidate) publishes the
-- lease it would hold, so that the holder can move the key to it in one statement (a new fencing
-- token, the waiter as owner, its TTL, lock-delay and metadata) without the waiter's process
-- taking part. NULL in a fair waiter's place, which only queues.
ALTER TABLE {{table:lock_waiters}} ADD COLUMN IF NOT EXISTS ttl_ms bigint;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN IF NOT EXISTS lock_delay_ms bigint;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN IF NOT EXISTS metadata jsonb;
