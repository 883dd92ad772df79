#include <dblock/connection_source.hpp>
#include <dblock/migrator.hpp>

// At every start-up, from every instance at once: the migrations are compiled in, and
// concurrent migrators wait for each other.
void migrate_at_startup(dblock::ConnectionSource& pool) {
  auto conn = pool.acquire();
  dblock::Migrator migrator(*conn);  // tables dblock_* in the connection's current schema
  migrator.up();
  migrator.verify();  // throws if an applied migration's text was changed
}

// The same tables under another prefix, in a schema (PostgreSQL) or database (MySQL) of their own.
void migrate_elsewhere(dblock::Connection& conn) {
  dblock::Migrator(conn, dblock::TableNames("jobs_", "locking")).up();
}
