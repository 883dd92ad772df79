-- Owner, lease and claim ids compare byte for byte, like keys. As utf8mb4_bin VARCHARs they were
-- PAD SPACE (MariaDB, and MySQL's utf8mb4_bin too), so owners "w" and "w " re-entered each
-- other's locks and claim ids differing by a trailing space passed for one another.
-- VARBINARY keeps each value's bytes as they are; the byte lengths hold the old character
-- lengths in utf8mb4 (four bytes a character). Defaults and rows are kept. Each ALTER rebuilds
-- its table, and lock statements on that table wait until it is done.
ALTER TABLE {{table:locks}}
    MODIFY lease_id      VARBINARY(256)  NOT NULL,
    MODIFY owner_host    VARBINARY(1020) NOT NULL,
    MODIFY owner_process VARBINARY(1020) NOT NULL,
    MODIFY owner_thread  VARBINARY(1020) NOT NULL;
ALTER TABLE {{table:row_locks}}
    MODIFY owner_host    VARBINARY(1020) NOT NULL DEFAULT '',
    MODIFY owner_process VARBINARY(1020) NOT NULL DEFAULT '',
    MODIFY owner_thread  VARBINARY(1020) NOT NULL DEFAULT '';
