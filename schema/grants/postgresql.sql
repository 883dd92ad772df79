-- SPDX-License-Identifier: Apache-2.0
-- The privileges each of dblock's roles needs on PostgreSQL, and no more
-- (docs/operations/privileges.md). One GRANT per line; each names the one role it is for.
--
-- Names are dblock's defaults; replace them with yours before running the file:
--   public             the schema holding dblock's tables (dblock migrate --schema)
--   dblock_            the table prefix (dblock migrate --prefix)
--   dblock_migrator    applies the migrations (`dblock migrate up`, Migrator::up()); owns the
--                      tables it creates
--   dblock_app         the service taking locks; also `dblock locks`, `release`, `run` and
--                      `doctor`
--   dblock_cleaner     `dblock clean`
--
-- Create the roles first (CREATE ROLE dblock_app LOGIN PASSWORD '...'), then, in the database
-- that holds the tables:
--   1. as the schema's owner or a superuser, the dblock_migrator line; then `dblock migrate up`
--      logged in as dblock_migrator, which owns what it creates;
--   2. as a superuser (or the owner of the schema and the tables), the whole file:
--        psql -d app -v ON_ERROR_STOP=1 -f schema/grants/postgresql.sql
-- Run step 2 again after an upgrade whose migrations add tables.

-- dblock_migrator: creates the tables, indexes, sequence, views and function in the schema. To
-- use another schema than the connection's current one (--schema), it also needs CREATE on the
-- database. A service that checks tokens (docs/locks/fencing.md) needs USAGE on the schema and
-- EXECUTE ON FUNCTION public.dblock_fence_token(text, bigint) (or SELECT on the views, to read).
GRANT USAGE, CREATE ON SCHEMA public TO dblock_migrator;
-- It also runs `dblock history enable` / `disable` (docs/operations/history.md), which create and
-- drop triggers on the lock table it owns, and their function; the function writes the history
-- with its owner's rights (SECURITY DEFINER), so the roles that lock need nothing more.

-- dblock_app: every lock strategy's statements, `dblock locks` and `dblock release`. Fair
-- waiting deletes its queue places (lock_waiters); nothing else is deleted. The row-lock fencing
-- tokens come from the sequence. SELECT on the migrations table: `dblock doctor` and
-- `dblock migrate status` read it.
GRANT USAGE ON SCHEMA public TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON public.dblock_locks TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON public.dblock_row_locks TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON public.dblock_versions TO dblock_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.dblock_lock_waiters TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON public.dblock_semaphores TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON public.dblock_semaphore_permits TO dblock_app;
GRANT USAGE ON SEQUENCE public.dblock_row_lock_tokens TO dblock_app;
GRANT SELECT ON public.dblock_schema_migrations TO dblock_app;
-- `dblock history KEY` reads the history of holds.
GRANT SELECT ON public.dblock_history TO dblock_app;

-- dblock_cleaner: deletes rows no longer in use from every table that keeps rows per key. Its
-- SELECT ... FOR UPDATE SKIP LOCKED needs UPDATE, though it never updates a row.
GRANT USAGE ON SCHEMA public TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_locks TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_row_locks TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_versions TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_lock_waiters TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_semaphores TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_semaphore_permits TO dblock_cleaner;
GRANT SELECT, UPDATE, DELETE ON public.dblock_history TO dblock_cleaner;
GRANT SELECT ON public.dblock_schema_migrations TO dblock_cleaner;
