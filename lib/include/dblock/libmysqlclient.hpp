// SPDX-License-Identifier: Apache-2.0
/// @file
/// MySQL and MariaDB through the libmysqlclient API (target dblock::mysql).
///
/// wrap_mysql() adapts a MYSQL* the service already owns; connect_mysql() opens one from a URL,
/// with CLIENT_FOUND_ROWS (so an UPDATE that matches a row counts it even when nothing changed)
/// and the session time zone set to UTC.
///
/// Thread-safety: as for dblock::Connection (one thread at a time). A wrapped MYSQL* must
/// outlive the returned object and must have been opened with CLIENT_FOUND_ROWS; wrap_mysql()
/// throws Error(kInvalidArgument) otherwise, because dblock reads "matched rows" to decide whether
/// a lease is still held. On MariaDB Connector/C, wrap_mysql() also refuses a handle with
/// auto-reconnect (MYSQL_OPT_RECONNECT) on: a silent reconnect would drop transactions and locks.
/// A wrapped handle keeps its own session time zone and character set (dblock's SQL does not
/// depend on them; connect_mysql() sets UTC and utf8mb4).
#pragma once

#include <mysql.h>

#include <memory>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/url.hpp"

namespace dblock {

DBLOCK_EXPORT std::unique_ptr<Connection> wrap_mysql(MYSQL* conn);

/// Opens a connection from a mysql:// or mariadb:// URL. Throws Error(kConnectFailed,
/// kAccessDenied, kInvalidArgument) with a redacted, one-line message.
DBLOCK_EXPORT std::unique_ptr<Connection> connect_mysql(const DatabaseUrl& url);

}  // namespace dblock
