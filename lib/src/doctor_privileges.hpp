// SPDX-License-Identifier: Apache-2.0
// The privilege checks of `dblock doctor` (dblock/doctor.hpp), in its words (dblock/finding.hpp):
// what a role needs on dblock's tables (every table the cleaner empties, sql/server_sql.hpp's
// CleanerSql::tables, and the migrations table), and on PostgreSQL its schema and sequence, found
// with probes that match no row; each privilege missing is named with the GRANT that gives it.
// schema/grants/<dialect>.sql lists the same privileges for people to apply. Internal.
//
//   detail::Privileges privileges(conn, tables);
//   Finding f = privileges.check(DoctorRole::kCleaner);      // "privileges" for the cleaner
//   std::string fix = privileges.grant({"SELECT"}, "schema_migrations");
//
// Thread-safety: uses the connection it is given (one thread at a time).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/finding.hpp"
#include "dblock/table_names.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

class Privileges {
 public:
  // Asks the server who the session is and which schema it uses.
  Privileges(Connection& conn, const TableNames& tables);

  // The "privileges" finding for `role`: kOk when it has all it needs, else kFailure naming
  // what it lacks, with the GRANTs (PostgreSQL: and ALTER ... OWNER) that give it as advice.
  Finding check(DoctorRole role);
  // The "cleaner" finding for a user checked as kApplication: kOk, or kWarning naming what the
  // cleaner would lack.
  Finding cleaner_warning();

  // "GRANT SELECT, INSERT ON "public"."dblock_locks" TO "alice";" for dblock's table `base`.
  std::string grant(const std::vector<std::string_view>& privileges, std::string_view base) const;
  // The user as a GRANT names it: "alice" (quoted) / 'alice'@'%'.
  const std::string& grantee() const noexcept { return grantee_; }

 private:
  struct Missing {
    std::string object;  // as messages name it: "dblock_locks", "sequence dblock_row_lock_tokens"
    std::vector<std::string_view> privileges;
    std::string fix;  // the statement that gives them
  };
  std::vector<Missing> missing_for(DoctorRole role);
  // Whether the user has `privilege` on dblock's table (or sequence) `base`; cached.
  bool has(std::string_view base, std::string_view privilege);
  std::string qualified(std::string_view base) const;  // schema-qualified, quoted

  Connection& conn_;
  const TableNames& tables_;
  Dialect dialect_;
  const DoctorSql& sql_;
  bool galera_;  // a Galera node: the migrator's lock is a row (galera_migration_lock.hpp)
  std::vector<std::string_view> tables_checked_;  // the cleaner's tables, then schema_migrations
  std::string schema_;                            // the schema (database) holding the tables
  std::string grantee_;
  std::map<std::pair<std::string, std::string>, bool> cache_;
};

}  // namespace dblock::detail
