-- SPDX-License-Identifier: Apache-2.0
-- The privileges each of dblock's roles needs on MySQL 8.0 and MariaDB, and no more
-- (docs/operations/privileges.md). One GRANT per line; each names the one role it is for.
-- Table names are unqualified: run the file with dblock's database as the default one.
--
-- Names are dblock's defaults; replace them with yours before running the file:
--   dblock_            the table prefix (dblock migrate --prefix)
--   dblock_migrator    applies the migrations (`dblock migrate up`, Migrator::up())
--   dblock_app         the service taking locks; also `dblock locks`, `release`, `run` and
--                      `doctor`
--   dblock_cleaner     `dblock clean`
-- Each is a role (CREATE ROLE dblock_app; GRANT dblock_app TO 'svc'@'%'; and make it the
-- user's default role: MariaDB SET DEFAULT ROLE dblock_app FOR 'svc'@'%', MySQL SET DEFAULT
-- ROLE dblock_app TO 'svc'@'%'), or a user of that name ('dblock_app'@'%').
--
-- As an administrator, before the first `dblock migrate up` (MySQL grants on tables that do
-- not exist yet):
--   mysql app < schema/grants/mysql.sql
-- Run it again after an upgrade whose migrations add tables.

-- dblock_migrator: creates and alters dblock's tables and records the migrations applied.
-- Another database than the connection's default (--schema) needs CREATE on that database too.
-- DELETE on the migrations table: on a Galera cluster a run's lock is a row there (a single
-- server does without it).
GRANT SELECT, INSERT, DELETE, CREATE, ALTER ON dblock_schema_migrations TO dblock_migrator;
-- TRIGGER on the lock table: `dblock history enable` creates the history's triggers, which then
-- run with this role's rights (INSERT on dblock_history) whoever ends a hold.
GRANT SELECT, INSERT, CREATE, ALTER, TRIGGER ON dblock_locks TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_row_locks TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_versions TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_lock_waiters TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_semaphores TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_semaphore_permits TO dblock_migrator;
-- The views of live leases: CREATE OR REPLACE VIEW needs DROP on the view too, and CREATE lets
-- this GRANT name a view not created yet. A service that checks tokens through them
-- (docs/locks/fencing.md) needs SELECT on the view and on its table.
GRANT CREATE, CREATE VIEW, DROP ON dblock_live_locks TO dblock_migrator;
GRANT CREATE, CREATE VIEW, DROP ON dblock_live_permits TO dblock_migrator;
GRANT SELECT, INSERT, CREATE, ALTER ON dblock_history TO dblock_migrator;

-- dblock_app: every lock strategy's statements, `dblock locks` and `dblock release`. Fair
-- waiting deletes its queue places (lock_waiters); nothing else is deleted. SELECT on the
-- migrations table: `dblock doctor` and `dblock migrate status` read it.
GRANT SELECT, INSERT, UPDATE ON dblock_locks TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON dblock_row_locks TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON dblock_versions TO dblock_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON dblock_lock_waiters TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON dblock_semaphores TO dblock_app;
GRANT SELECT, INSERT, UPDATE ON dblock_semaphore_permits TO dblock_app;
GRANT SELECT ON dblock_schema_migrations TO dblock_app;
-- `dblock history KEY` reads the history of holds (docs/operations/history.md; MySQL and
-- MariaDB do not record it yet, so it stays empty here).
GRANT SELECT ON dblock_history TO dblock_app;

-- dblock_cleaner: deletes rows no longer in use from every table that keeps rows per key, and
-- the history of holds past its retention.
GRANT SELECT, DELETE ON dblock_locks TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_row_locks TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_versions TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_lock_waiters TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_semaphores TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_semaphore_permits TO dblock_cleaner;
GRANT SELECT, DELETE ON dblock_history TO dblock_cleaner;
GRANT SELECT ON dblock_schema_migrations TO dblock_cleaner;
