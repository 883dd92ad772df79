// SPDX-License-Identifier: Apache-2.0
// The database x driver pairs the integration suite runs against, and each one's quirks: the
// few places where PostgreSQL and MySQL/MariaDB, or the drivers, differ in ways a test must
// know about. Modelled on SOCI's shared test suite with its per-database quirks object.
//
// Thread-safety: Backend is a plain value; helpers open fresh connections per call.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/error.hpp"
#include "dblock/table_names.hpp"
#include "dblock/url.hpp"

namespace dblock::testing {

struct Backend {
  std::string name;     // "postgresql_libpqxx": the test-name suffix
  Dialect dialect;      //
  std::string driver;   // the URL's ?driver= value
  std::string url_env;  // the environment variable holding this database's URL

  // The URL for this pair (driver set). Throws std::runtime_error when url_env is unset, so a
  // pair whose database is missing fails rather than skips.
  DatabaseUrl url() const;
  // Opens a connection for this pair.
  std::unique_ptr<Connection> connect() const;

  // Quirk: the code NOWAIT on a locked row fails with. PostgreSQL 55P03 and MySQL 8 errno 3572
  // are kLockNotAvailable; MariaDB reports errno 1205, kLockWaitTimeout.
  ErrorCode nowait_code(Connection& conn) const;
  // $n on PostgreSQL, ? on MySQL.
  std::string param(int n) const;
  // The server-side id of the session on `conn`.
  std::int64_t session_id(Connection& conn) const;
  // Kills the session `id` from `killer`.
  void kill_session(Connection& killer, std::int64_t id) const;
  // SessionLock's name for `key` under `tables` as the server knows it (PostgreSQL: the bigint,
  // as text; MySQL: the GET_LOCK name), computed by the server from the documented recipe.
  std::string session_lock_name(Connection& conn, const TableNames& tables,
                                const std::string& key) const;
  // The session holding SessionLock's lock on `key`, or 0 when the server shows it free.
  std::int64_t session_lock_holder(Connection& conn, const TableNames& tables,
                                   const std::string& key) const;
  // Queries that describe a schema's (or MySQL database's) tables, columns, indexes and
  // constraints; each takes the schema name as its only parameter and returns rows of text.
  std::vector<std::string> catalog_queries() const;
  // Switches `conn`'s default schema (PostgreSQL search_path / MySQL USE).
  void use_schema(Connection& conn, const std::string& schema) const;
  // Drops a schema (PostgreSQL) or database (MySQL) with everything in it.
  void drop_schema(Connection& conn, const std::string& schema) const;
  // Drops the tables whose names start with `prefix` in the current schema.
  void drop_tables_with_prefix(Connection& conn, const std::string& prefix) const;
};

// The pairs built into this test binary.
std::vector<Backend> all_backends();
// Those of them on PostgreSQL.
std::vector<Backend> postgresql_backends();

// `url` (text with user:password@) with the password replaced by `password`.
std::string with_password(std::string url, const std::string& password);

// A short random lower-case name, unique per call: "t3f9a1c2e".
std::string unique_name(const std::string& stem = "t");

// Test output names the pair instead of dumping the struct's bytes.
inline void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.name; }

struct BackendName {
  std::string operator()(const ::testing::TestParamInfo<Backend>& info) const {
    return info.param.name;
  }
};

}  // namespace dblock::testing
