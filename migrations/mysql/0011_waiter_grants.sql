-- Grants in the releasing commit (PostgreSQL, where a notification tells the head): a fair
-- waiter's place says when the waiter last refreshed it, on the server's clock (refreshed_at)
-- and on the waiter's own (sent_us). MySQL and MariaDB waiters poll, and a release there grants
-- nothing; the columns keep the two dialects' tables and numbering alike.
-- MySQL 8.0 has no ADD COLUMN IF NOT EXISTS: a column found there already (a migrator that
-- stopped before recording this migration, or one on another Galera node) counts as added.
ALTER TABLE {{table:lock_waiters}} ADD COLUMN refreshed_at DATETIME(6) NULL;
ALTER TABLE {{table:lock_waiters}} ADD COLUMN sent_us BIGINT NULL;
