-- previous_lease_id: the lease id a row carried when its current holder took it: the release id
-- of the release that freed it, or the id of the lease that expired. A release whose reply was
-- lost, sent again after another owner took the key, finds its own release id there and knows
-- that its first attempt freed the key (instead of reporting a lease that was never lost).
-- MySQL 8.0 has no ADD COLUMN IF NOT EXISTS: a column found there already (a migrator that
-- stopped before recording this migration, or one on another Galera node) counts as added.
ALTER TABLE {{table:locks}} ADD COLUMN previous_lease_id VARBINARY(256) NULL;
ALTER TABLE {{table:semaphore_permits}} ADD COLUMN previous_lease_id VARBINARY(256) NULL;
