-- MySQL/MariaDB migration 0003 makes the owner, lease id and claim id columns compare byte for
-- byte (a PAD SPACE collation made "w" and "w " the same owner there). PostgreSQL's text
-- already compares byte for byte under the database's deterministic collation, and an equality
-- ignores no trailing space, so its columns stay as they are. The version is kept here so both
-- dialects carry the same migrations.
SELECT 1;
