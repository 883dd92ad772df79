#include <mysql.h>

#include <dblock/error.hpp>
#include <dblock/libmysqlclient.hpp>
#include <memory>

// A MYSQL* the service opens itself: dblock reads "rows matched" to tell whether a lease is
// still held, so the handle must be opened with CLIENT_FOUND_ROWS (and without auto-reconnect).
std::unique_ptr<dblock::Connection> open_for_dblock(const char* host, unsigned port,
                                                    const char* user, const char* password,
                                                    const char* database, MYSQL* handle) {
  if (mysql_real_connect(handle, host, user, password, database, port, nullptr,
                         CLIENT_FOUND_ROWS) == nullptr) {
    throw dblock::Error(dblock::ErrorCode::kConnectFailed, mysql_error(handle));
  }
  return dblock::wrap_mysql(handle);  // the handle must outlive the returned connection
}
