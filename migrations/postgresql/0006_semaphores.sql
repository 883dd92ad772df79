-- Counting semaphores: a key's limit (how many permits it has), and one row per permit slot
-- (0 to permits - 1) that has ever been taken. A permit is a lease: held while expires_at lies
-- ahead, free once it has passed (release sets it to now); the cleaner deletes rows long past
-- it, and then the limit of a key left without permit rows. Every Semaphore on a key must ask
-- for the same number of permits, or change it with Semaphore::set_limit.
CREATE TABLE IF NOT EXISTS {{table:semaphores}} (
    lock_key   varchar(255) NOT NULL PRIMARY KEY,
    permits    integer      NOT NULL,
    changed_at timestamptz  NOT NULL
);
CREATE INDEX IF NOT EXISTS {{name:semaphores_changed_at_idx}} ON {{table:semaphores}} (changed_at);
CREATE TABLE IF NOT EXISTS {{table:semaphore_permits}} (
    lock_key      varchar(255) NOT NULL,
    slot          integer      NOT NULL,
    lease_id      varchar(64)  NOT NULL,
    owner_host    varchar(255) NOT NULL,
    owner_process varchar(255) NOT NULL,
    owner_thread  varchar(255) NOT NULL,
    fencing_token bigint       NOT NULL,  -- slot + 1024 x (µs of the clock, raised per slot)
    acquired_at   timestamptz  NOT NULL,
    expires_at    timestamptz  NOT NULL,
    metadata      jsonb,
    PRIMARY KEY (lock_key, slot)
);
CREATE INDEX IF NOT EXISTS {{name:semaphore_permits_expires_at_idx}}
    ON {{table:semaphore_permits}} (expires_at);
