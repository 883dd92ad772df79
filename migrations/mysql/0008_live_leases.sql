-- The live leases, for services on the same database that check a fencing token inside their own
-- transaction, in any language (docs/locks/fencing.md). Unexpired on the statement's clock
-- (UTC_TIMESTAMP(6): the statement's start).
--
-- live_locks (unique-key leases) and live_permits (semaphore and reader-writer permits): views
-- of one table each, merged into the caller's statement (ALGORITHM=MERGE), so a locking read of
-- the view (LOCK IN SHARE MODE) locks the base row, and a takeover waits for the caller's
-- commit. SQL SECURITY INVOKER: the caller's rights on the tables apply (SELECT), and the view
-- does not depend on the account that created it.
CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW {{table:live_locks}} AS
    SELECT lock_key, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM {{table:locks}}
    WHERE hold_count > 0 AND expires_at > UTC_TIMESTAMP(6);
CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW {{table:live_permits}} AS
    SELECT lock_key, slot, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM {{table:semaphore_permits}}
    WHERE expires_at > UTC_TIMESTAMP(6);
