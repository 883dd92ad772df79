-- The live leases, for services on the same database that check a fencing token inside their own
-- transaction, in any language (docs/locks/fencing.md). Unexpired on the statement's clock
-- (statement_timestamp(); now() would be the transaction's start).
--
-- live_locks (unique-key leases) and live_permits (semaphore and reader-writer permits) are
-- plain views of one table each, for reading. fence_token(key, token) checks a token and
-- share-locks the row that carries it until the caller's transaction ends, so a takeover waits
-- for the commit: true while the lease is held, false when it is not (roll back). It runs with
-- its owner's rights (a locking read needs UPDATE on the table), so a service needs only EXECUTE;
-- with the search path it was created with, so it finds the tables the migrator found.
CREATE OR REPLACE VIEW {{table:live_locks}} AS
    SELECT lock_key, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM {{table:locks}}
    WHERE hold_count > 0 AND expires_at > statement_timestamp();
CREATE OR REPLACE VIEW {{table:live_permits}} AS
    SELECT lock_key, slot, fencing_token, owner_host, owner_process, owner_thread, expires_at
    FROM {{table:semaphore_permits}}
    WHERE expires_at > statement_timestamp();
CREATE OR REPLACE FUNCTION {{table:fence_token}}(key text, token bigint)
    RETURNS boolean LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path FROM CURRENT AS $fence$
    SELECT EXISTS (SELECT 1 FROM {{table:locks}} l
                   WHERE l.lock_key = $1 AND l.fencing_token = $2 AND l.hold_count > 0
                   AND l.expires_at > statement_timestamp() FOR SHARE)
        OR EXISTS (SELECT 1 FROM {{table:semaphore_permits}} p
                   WHERE p.lock_key = $1 AND p.slot = ($2 % 1024)::integer
                   AND p.fencing_token = $2 AND p.expires_at > statement_timestamp() FOR SHARE)
$fence$;
REVOKE ALL ON FUNCTION {{table:fence_token}}(text, bigint) FROM PUBLIC;
