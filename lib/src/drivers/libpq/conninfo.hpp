// The libpq connection string for a postgresql:// URL: shared by the libpq and libpqxx drivers.
// Internal to the dblock_postgresql target.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "dblock/url.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::libpq_driver {

// host, port, user, password and dbname from the URL, connect_timeout=10 unless the URL sets
// one, fallback_application_name=dblock, and every other URL parameter passed on as a libpq
// keyword. Throws Error(kInvalidArgument) naming `where` for a URL that is not postgresql:// or
// a parameter that is not a libpq keyword; `driver` says which driver refused ("libpq").
std::string conninfo(const DatabaseUrl& url, std::string_view where, std::string_view driver);

}  // namespace dblock::libpq_driver

#pragma GCC visibility pop
