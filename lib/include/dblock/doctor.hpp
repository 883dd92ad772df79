// SPDX-License-Identifier: Apache-2.0
/// @file
/// check_deployment(): which of dblock's guarantees hold on the database a connection reaches,
/// and what to change where one does not (`dblock doctor` prints them; a service may run them at
/// start-up and log them). One finding per check, in this order: server, writable, replication,
/// isolation, time_zone, clock, migrations, history, privileges (what the DoctorRole given needs)
/// and, for kApplication only, cleaner. A privilege the user lacks, also one a check needs in order
/// to look, is a finding, never an Error.
///
/// @code
///   for (const dblock::Finding& f : dblock::check_deployment(*conn, dblock::TableNames())) {
///     if (f.status != dblock::Finding::Status::kOk) log(f.check, f.message, f.advice);
///   }
/// @endcode
///
/// Thread-safety: uses the connection it is given (one thread at a time). Changes nothing: no
/// row is written, no setting changed (the privilege probes are statements that match no row).
///
/// Explained in docs/operations/replicated-databases.md and docs/operations/privileges.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/finding.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

/// Runs every check on `conn` for the tables `tables` names, the privileges for `role`. Throws
/// Error only when the connection fails (kConnectionLost, ...); what a check cannot read becomes
/// its finding.
DBLOCK_EXPORT std::vector<Finding> check_deployment(Connection& conn, const TableNames& tables,
                                                    DoctorRole role = DoctorRole::kApplication);

}  // namespace dblock
