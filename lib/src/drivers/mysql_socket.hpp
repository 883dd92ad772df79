// The socket of a MYSQL connection, for the drivers that hold one (libmysqlclient and SOCI's
// MySQL backend). Header-only: each driver target compiles it against its own client headers.
// Internal.
//
// Thread-safety: a pure function of the handle.
#pragma once

#include <mysql.h>

namespace dblock::detail {

inline int mysql_socket(MYSQL* conn) noexcept {
  if (conn == nullptr) return -1;
#ifdef LIBMARIADB
  return static_cast<int>(mysql_get_socket(conn));
#else
  return static_cast<int>(conn->net.fd);
#endif
}

}  // namespace dblock::detail
