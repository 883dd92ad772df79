// SPDX-License-Identifier: Apache-2.0
// The socket of a MYSQL connection, and which server it talks to, for the drivers that hold one
// (libmysqlclient and SOCI's MySQL backend). Header-only: each driver target compiles it against
// its own client headers. Internal.
//
// Thread-safety: a pure function of the handle.
#pragma once

#include <mysql.h>

#include <string_view>

#include "dblock/dialect.hpp"

namespace dblock::detail {

inline int mysql_socket(MYSQL* conn) noexcept {
  if (conn == nullptr) return -1;
#ifdef LIBMARIADB
  return static_cast<int>(mysql_get_socket(conn));
#else
  return static_cast<int>(conn->net.fd);
#endif
}

// MariaDB or MySQL, from the version the server sent when the session opened (no round trip).
inline Server mysql_server(MYSQL* conn) noexcept {
  const char* version = conn == nullptr ? nullptr : mysql_get_server_info(conn);
  return version != nullptr && std::string_view(version).find("MariaDB") != std::string_view::npos
             ? Server::kMariaDB
             : Server::kMySQL;
}

}  // namespace dblock::detail
