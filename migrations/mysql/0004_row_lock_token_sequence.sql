-- PostgreSQL takes row-lock fencing tokens from a sequence from this version on, so that a token
-- handed to a lease whose transaction rolled back is never handed out again. MySQL 8.0 has no
-- sequences, and InnoDB undoes every change of a rolled-back transaction, so on MySQL and
-- MariaDB row-lock tokens stay GREATEST(previous + 1, clock in microseconds): a rolled-back
-- token can come again only while tokens run ahead of the server clock (more than one
-- acquisition of a key per microsecond, or the clock stepped back). Nothing to change here.
DO 0;
