-- Row-lock fencing tokens come from a sequence. A token is stamped on the key's row inside the
-- lease's transaction; when that transaction rolls back (a lease dropped without release, a
-- killed session) the row keeps its old token, but the caller may have used the one it was
-- handed. nextval() is never rolled back, so no token is handed out twice. The sequence starts
-- above every token stamped so far (those came from the clock in microseconds).
CREATE SEQUENCE IF NOT EXISTS {{table:row_lock_tokens}} AS bigint;
SELECT setval('{{table:row_lock_tokens}}', GREATEST(
    (extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
    (SELECT COALESCE(max(fencing_token), 0) FROM {{table:row_locks}}) + 1));
