// SPDX-License-Identifier: Apache-2.0
// What the SOCI driver reads off an open soci::session: its dialect and where it points.
// Implemented in connection.cpp; used by the pool source too. Internal to the dblock_soci target.
//
// Thread-safety: reads the session; the caller must hold it (not used by another thread).
#pragma once

#include <soci/soci.h>

#include <string>

#include "dblock/dialect.hpp"

namespace dblock::soci_driver {

// The dialect of an open session from its backend name ("postgresql" or "mysql"). Throws
// Error(kInvalidArgument) for a closed session or another backend.
Dialect dialect_of(soci::session& session);

// Where an open session points, safe to print: "PostgreSQL 127.0.0.1:5432/app" or
// "MySQL 127.0.0.1:3306/app".
std::string location_of(soci::session& session, Dialect dialect);

}  // namespace dblock::soci_driver
