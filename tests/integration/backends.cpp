// SPDX-License-Identifier: Apache-2.0
#include "backends.hpp"

#include <cstdlib>
#include <random>
#include <stdexcept>

#include "dblock/open.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

DatabaseUrl Backend::url() const {
  const char* text = std::getenv(url_env.c_str());
  if (text == nullptr || *text == '\0') {
    throw std::runtime_error(url_env +
                             " is not set: run the tests with scripts/test.sh, or export it "
                             "(see scripts/dev-db.sh env)");
  }
  DatabaseUrl u = DatabaseUrl::parse(text);
  u.driver = driver;
  return u;
}

std::unique_ptr<Connection> Backend::connect() const { return open_connection(url()); }

std::string Backend::param(int n) const {
  if (dialect != Dialect::kPostgreSQL) return "?";
  // Appended, not "$" + std::to_string(n): GCC 12 reports a false -Wrestrict for that in
  // Release builds.
  std::string out = "$";
  out += std::to_string(n);
  return out;
}

ErrorCode Backend::nowait_code(Connection& conn) const {
  if (dialect == Dialect::kPostgreSQL) return ErrorCode::kLockNotAvailable;
  auto v = conn.execute("SELECT VERSION() AS v").at(0, "v").value_or("");
  return v.find("MariaDB") != std::string::npos ? ErrorCode::kLockWaitTimeout
                                                : ErrorCode::kLockNotAvailable;
}

std::int64_t Backend::session_id(Connection& conn) const {
  auto r = conn.execute(dialect == Dialect::kPostgreSQL ? "SELECT pg_backend_pid() AS id"
                                                        : "SELECT CONNECTION_ID() AS id");
  return r.int64_at(0, "id");
}

void Backend::kill_session(Connection& killer, std::int64_t id) const {
  if (dialect == Dialect::kPostgreSQL) {
    killer.execute("SELECT pg_terminate_backend($1::int)", {Value(id)});
  } else {
    killer.execute("KILL CONNECTION " + std::to_string(id));  // an integer we read ourselves
  }
}

std::string Backend::session_lock_name(Connection& conn, const TableNames& tables,
                                       const std::string& key) const {
  const std::string input = tables.schema() + '\x1f' + tables.prefix() + '\x1f' + key;
  const char* sql = dialect == Dialect::kPostgreSQL
                        ? "SELECT (('x' || left(encode(sha256(convert_to($1, 'UTF8')), 'hex'), 16))"
                          "::bit(64)::bigint)::text AS name"
                        : "SELECT CONCAT('dblock_', LEFT(SHA2(?, 256), 40)) AS name";
  return conn.execute(sql, {Value(input)}).at(0, "name").value_or("");
}

std::int64_t Backend::session_lock_holder(Connection& conn, const TableNames& tables,
                                          const std::string& key) const {
  const std::string lock = session_lock_name(conn, tables, key);
  if (dialect == Dialect::kPostgreSQL) {
    // An advisory lock on a bigint: its high 32 bits in classid, its low ones in objid.
    auto r = conn.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND classid::bigint = ($1::bigint >> 32) & 4294967295"
        " AND objid::bigint = $1::bigint & 4294967295",
        {Value(static_cast<long long>(std::stoll(lock)))});
    return r.empty() ? 0 : r.int64_at(0, "pid");
  }
  auto r = conn.execute("SELECT COALESCE(IS_USED_LOCK(?), 0) AS id", {Value(lock)});
  return r.int64_at(0, "id");
}

std::vector<std::string> Backend::catalog_queries() const {
  if (dialect == Dialect::kPostgreSQL) {
    return {
        "SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),"
        " a.attnotnull, pg_get_expr(d.adbin, d.adrelid)"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " WHERE n.nspname = $1 AND c.relkind IN ('r', 'S', 'v') AND a.attnum > 0"
        " AND NOT a.attisdropped"
        " AND c.relname <> 'dblock_schema_migrations' ORDER BY 1, 2",
        "SELECT tablename, indexname, replace(indexdef, schemaname || '.', '')"
        " FROM pg_indexes WHERE schemaname = $1"
        " AND tablename <> 'dblock_schema_migrations' ORDER BY 1, 2",
        "SELECT cl.relname, co.conname, co.contype, pg_get_constraintdef(co.oid)"
        " FROM pg_constraint co JOIN pg_class cl ON cl.oid = co.conrelid"
        " JOIN pg_namespace n ON n.oid = co.connamespace"
        " WHERE n.nspname = $1 AND cl.relname <> 'dblock_schema_migrations' ORDER BY 1, 2",
        "SELECT p.proname, pg_get_function_identity_arguments(p.oid),"
        " pg_get_function_result(p.oid), p.prosecdef, p.provolatile"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = $1 ORDER BY 1, 2",
    };
  }
  return {
      "SELECT table_name, engine, table_collation FROM information_schema.tables"
      " WHERE table_schema = ? AND table_name <> 'dblock_schema_migrations' ORDER BY 1",
      "SELECT table_name, ordinal_position, column_name, column_type, is_nullable,"
      " column_default, character_set_name, collation_name, extra"
      " FROM information_schema.columns WHERE table_schema = ?"
      " AND table_name <> 'dblock_schema_migrations' ORDER BY 1, 2",
      "SELECT table_name, index_name, seq_in_index, column_name, non_unique"
      " FROM information_schema.statistics WHERE table_schema = ?"
      " AND table_name <> 'dblock_schema_migrations' ORDER BY 1, 2, 3",
      "SELECT table_name, constraint_name, constraint_type"
      " FROM information_schema.table_constraints WHERE constraint_schema = ?"
      " AND table_name <> 'dblock_schema_migrations' ORDER BY 1, 2",
  };
}

void Backend::use_schema(Connection& conn, const std::string& schema) const {
  if (dialect == Dialect::kPostgreSQL) {
    conn.execute("SET search_path TO " + quote_identifier(dialect, schema));
  } else {
    conn.execute("USE " + quote_identifier(dialect, schema));
  }
}

void Backend::drop_schema(Connection& conn, const std::string& schema) const {
  conn.execute(std::string(dialect == Dialect::kPostgreSQL ? "DROP SCHEMA IF EXISTS "
                                                           : "DROP DATABASE IF EXISTS ") +
               quote_identifier(dialect, schema) +
               (dialect == Dialect::kPostgreSQL ? " CASCADE" : ""));
}

void Backend::drop_tables_with_prefix(Connection& conn, const std::string& prefix) const {
  validate_identifier(prefix, "prefix");
  // Views first (a view's table cannot be dropped under it on PostgreSQL); MySQL lists views
  // among the tables, as table_type VIEW.
  auto r = conn.execute(
      dialect == Dialect::kPostgreSQL
          ? "SELECT viewname AS t, 'VIEW' AS kind FROM pg_views WHERE schemaname = "
            "current_schema() AND starts_with(viewname, $1) UNION ALL SELECT tablename, 'TABLE'"
            " FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, $1)"
          : "SELECT table_name AS t, IF(table_type = 'VIEW', 'VIEW', 'TABLE') AS kind"
            " FROM information_schema.tables WHERE table_schema = DATABASE()"
            " AND LEFT(table_name, CHAR_LENGTH(?)) = ? ORDER BY kind DESC",
      dialect == Dialect::kPostgreSQL ? std::vector<Value>{Value(prefix)}
                                      : std::vector<Value>{Value(prefix), Value(prefix)});
  for (std::size_t i = 0; i < r.size(); ++i) {
    conn.execute("DROP " + r.at(i, "kind").value_or("TABLE") + " IF EXISTS " +
                 quote_identifier(dialect, *r.at(i, "t")));
  }
  if (dialect != Dialect::kPostgreSQL) return;
  auto functions = conn.execute(
      "SELECT p.oid::regprocedure::text AS f FROM pg_proc p"
      " WHERE p.pronamespace = current_schema()::regnamespace AND starts_with(p.proname, $1)",
      {Value(prefix)});
  for (std::size_t i = 0; i < functions.size(); ++i) {
    conn.execute("DROP FUNCTION IF EXISTS " + *functions.at(i, "f"));  // regprocedure quotes
  }
  auto seqs = conn.execute(
      "SELECT sequencename AS s FROM pg_sequences WHERE schemaname = current_schema()"
      " AND starts_with(sequencename, $1)",
      {Value(prefix)});
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    conn.execute("DROP SEQUENCE IF EXISTS " + quote_identifier(dialect, *seqs.at(i, 0)));
  }
}

std::vector<Backend> all_backends() {
  std::vector<Backend> out;
  const Backend pg{"postgresql_libpqxx", Dialect::kPostgreSQL, "libpqxx", "DBLOCK_TEST_PG_URL"};
  const Backend my{"mysql_libmysqlclient", Dialect::kMySQL, "libmysqlclient",
                   "DBLOCK_TEST_MYSQL_URL"};
#ifdef DBLOCK_HAVE_LIBPQXX
  out.push_back(pg);
#endif
#ifdef DBLOCK_HAVE_LIBPQ
  out.push_back(Backend{"postgresql_libpq", pg.dialect, "libpq", pg.url_env});
#endif
#ifdef DBLOCK_HAVE_SOCI
  out.push_back(Backend{"postgresql_soci", pg.dialect, "soci", pg.url_env});
#endif
#ifdef DBLOCK_HAVE_MYSQL
  out.push_back(my);
#endif
#ifdef DBLOCK_HAVE_SOCI
  out.push_back(Backend{"mysql_soci", my.dialect, "soci", my.url_env});
#endif
  return out;
}

std::vector<Backend> postgresql_backends() {
  std::vector<Backend> out;
  for (const Backend& b : all_backends()) {
    if (b.dialect == Dialect::kPostgreSQL) out.push_back(b);
  }
  return out;
}

std::string with_password(std::string url, const std::string& password) {
  auto at = url.find('@');
  auto colon = url.rfind(':', at);
  if (at == std::string::npos || colon == std::string::npos) {
    throw std::runtime_error("test URL has no user:password@ part");
  }
  return url.replace(colon + 1, at - colon - 1, password);
}

std::string unique_name(const std::string& stem) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = stem;
  auto v = rng();
  for (int i = 0; i < 10; ++i, v >>= 4) out += kHex[v & 15];
  return out;
}

}  // namespace dblock::testing
