// SPDX-License-Identifier: Apache-2.0
// The mysql:// URL parameters the libmysqlclient driver understands, and how they become
// mysql_options() on a handle before mysql_real_connect(). Internal to the dblock_mysql target.
//
//   connect_timeout=S   seconds to open the TCP connection and finish the handshake (default 10)
//   read_timeout=S      seconds a read from the server may take (Oracle's library retries a read
//   write_timeout=S     or write up to three times, so the wait can be longer); default none
//   socket=PATH         Unix socket (also unix_socket=PATH); used when the host is empty or
//                       "localhost"
//   ssl_mode=MODE       DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY, as in
//                       MySQL's --ssl-mode; with MariaDB Connector/C, VERIFY_CA also checks
//                       the host name (the library verifies both or neither)
//   ssl_ca=PATH         CA certificate file for verifying the server
//
// Any other parameter is rejected with Error(kInvalidArgument) naming it.
//
// Thread-safety: pure functions, apart from the handle passed to apply_options().
#pragma once

#include <mysql.h>

#include <optional>
#include <string>
#include <string_view>

#include "dblock/url.hpp"

namespace dblock::mysql_driver {

struct ConnectOptions {
  unsigned int connect_timeout = 10;
  std::optional<unsigned int> read_timeout;
  std::optional<unsigned int> write_timeout;
  std::string socket;
  std::string ssl_mode;  // upper case; empty: the client library's default
  std::string ssl_ca;
};

// Reads url.params. Throws Error(kInvalidArgument) (message prefixed with `where`) for an unknown
// parameter or a bad value.
ConnectOptions parse_connect_options(const DatabaseUrl& url, std::string_view where);

// Sets the options on a handle from mysql_init(), together with what dblock always wants: the
// utf8mb4 character set, no LOAD DATA LOCAL, and no auto-reconnect.
void apply_connect_options(MYSQL* conn, const ConnectOptions& options);

// After mysql_real_connect(): throws Error(kConnectFailed) when ssl_mode asks for TLS and the
// TCP connection has none (Connector/C does not refuse that by itself). Unix socket connections
// are exempt: Connector/C never uses TLS on them.
void check_tls(MYSQL* conn, const ConnectOptions& options, std::string_view where);

}  // namespace dblock::mysql_driver
