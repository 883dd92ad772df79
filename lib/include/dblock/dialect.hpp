// SPDX-License-Identifier: Apache-2.0
/// @file
/// The SQL a connection speaks (Dialect) and the server behind it (Server): the two words the
/// rest of the API uses to say which database it means, in a header of their own so that table
/// names, URLs and migrations can name a dialect without the driver interface (connection.hpp).
///
/// @code
///   dblock::Server server = conn.server();                 // kMariaDB
///   dblock::Dialect dialect = dblock::dialect_of(server);  // kMySQL
///   log(std::string(dblock::to_string(server)));           // "mariadb"
/// @endcode
///
/// Thread-safety: plain values and pure functions, safe from any thread.
#pragma once

#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

/// The SQL a connection speaks: placeholders, quoting, and which statements dblock sends.
enum class Dialect { kPostgreSQL, kMySQL };

/// "postgresql" or "mysql".
DBLOCK_EXPORT std::string_view to_string(Dialect dialect) noexcept;

/// The server behind a connection. MySQL and MariaDB share the MySQL dialect but differ in what
/// they accept beyond it (MariaDB's SET STATEMENT and FOR UPDATE WAIT n, MySQL 8.0's optimizer
/// hints), so dblock picks some statements by server.
enum class Server { kPostgreSQL, kMySQL, kMariaDB };

/// "postgresql", "mysql" or "mariadb".
DBLOCK_EXPORT std::string_view to_string(Server server) noexcept;
/// kPostgreSQL for kPostgreSQL, kMySQL for kMySQL and kMariaDB.
DBLOCK_EXPORT Dialect dialect_of(Server server) noexcept;

}  // namespace dblock
