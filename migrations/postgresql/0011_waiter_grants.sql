-- Grants in the releasing commit: a fair waiter's place says when the waiter last refreshed it,
-- on the server's clock (refreshed_at) and on the waiter's own (sent_us, read by the waiter's
-- process only), so that a release can give the key to the queue's head in its own statement
-- with a lease that runs from that refresh, and the head can take it from the notification
-- without a statement of its own. NULL in a place written by an older version (and in an
-- election candidate's): such a head is woken, not granted.
ALTER TABLE {{table:lock_waiters}} ADD COLUMN IF NOT EXISTS refreshed_at timestamptz;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN IF NOT EXISTS sent_us bigint;
