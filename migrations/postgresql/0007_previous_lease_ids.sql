-- previous_lease_id: the lease id a row carried when its current holder took it: the release id
-- of the release that freed it, or the id of the lease that expired. A release whose reply was
-- lost, sent again after another owner took the key, finds its own release id there and knows
-- that its first attempt freed the key (instead of reporting a lease that was never lost).
ALTER TABLE {{table:locks}} ADD COLUMN IF NOT EXISTS previous_lease_id varchar(64);
ALTER TABLE {{table:semaphore_permits}} ADD COLUMN IF NOT EXISTS previous_lease_id varchar(64);
