// SPDX-License-Identifier: Apache-2.0
// Checks of a deployment: which of dblock's guarantees hold on the database a connection reaches,
// and what to change where one does not (`dblock doctor` prints them; a service may run them at
// start-up and log them).
//
// One finding per check, in this order:
//   server       the server, its flavour and version, and whether this version is tested
//   writable     a primary: not a standby or a read-only server (locks are writes)
//   replication  PostgreSQL: standbys and the synchronous settings (an asynchronous standby
//                that is promoted loses acknowledged lock writes); MariaDB: a Galera cluster's
//                state, or replicas and semi-synchronous replication
//   isolation    the session's default isolation level (informational: dblock sets what it
//                needs per transaction)
//   time_zone    the server's time zone (informational: dblock's times are UTC)
//   clock        this host's clock against the server's (informational: leases run on the
//                server clock only)
//   migrations   dblock's migrations all applied, none changed
//   privileges   what the role checked (DoctorRole) needs on dblock's tables, schema and
//                sequence; each missing privilege named, with the GRANT that gives it
//   cleaner      (role kApplication only) whether this user may also run the cleaner; a
//                warning only, the cleaner may run as another user
//
// A privilege the user lacks, also one a check needs in order to look (the migrations table,
// PostgreSQL's schema), is a finding, never an Error. schema/grants/<dialect>.sql lists what
// each role needs (docs/operations/privileges.md).
//
//   for (const dblock::Finding& f : dblock::check_deployment(*conn, dblock::TableNames())) {
//     if (f.status != dblock::Finding::Status::kOk) log(f.check, f.message, f.advice);
//   }
//
// Thread-safety: uses the connection it is given (one thread at a time). Changes nothing: no
// row is written, no setting changed (the privilege probes are statements that match no row).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct Finding {
  enum class Status {
    kOk,       // the guarantee holds (or the check is informational)
    kWarning,  // holds, with a caveat worth acting on
    kFailure,  // a guarantee does not hold here
  };
  std::string check;  // "server", "writable", "replication", ... (see above)
  Status status = Status::kOk;
  std::string message;  // what was found
  std::string advice;   // what to change; empty when nothing
};

DBLOCK_EXPORT std::string_view to_string(Finding::Status status) noexcept;

// What the user the connection logs in as is for: whose privileges "privileges" checks.
enum class DoctorRole {
  kApplication,  // takes locks: every strategy's statements, `dblock locks` and `release`
  kCleaner,      // runs `dblock clean`
  kMigrator,     // applies the migrations: creates and alters dblock's tables
};

DBLOCK_EXPORT std::string_view to_string(DoctorRole role) noexcept;

// Runs every check on `conn` for the tables `tables` names, the privileges for `role`. Throws
// Error only when the connection fails (kConnectionLost, ...); what a check cannot read becomes
// its finding.
DBLOCK_EXPORT std::vector<Finding> check_deployment(Connection& conn, const TableNames& tables,
                                                    DoctorRole role = DoctorRole::kApplication);

}  // namespace dblock
