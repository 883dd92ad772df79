// SPDX-License-Identifier: Apache-2.0
// What `dblock --version` prints: the library version (project(VERSION) in CMakeLists.txt, through
// dblock::library_version()) and the database drivers this build carries.
//
// Thread-safety: the function is pure and safe from any thread.
#pragma once

#include <string>

namespace dblock::cli {

// "dblock 0.1.0 (drivers: libpq, libpqxx, libmysqlclient, soci)", without a trailing newline:
// the drivers open_connection() can use, each database's default first.
std::string version_text();

}  // namespace dblock::cli
