// SPDX-License-Identifier: Apache-2.0
// URL parameters -> mysql_options() for MariaDB Connector/C and Oracle's libmysqlclient.
#include "drivers/libmysqlclient/connect_options.hpp"

#include <charconv>
#include <system_error>

#include "drivers/libmysqlclient/errors.hpp"

namespace dblock::mysql_driver {
namespace {

constexpr unsigned int kMaxSeconds = 86400;

unsigned int parse_seconds(std::string_view name, std::string_view value, std::string_view where) {
  unsigned int out = 0;
  auto r = std::from_chars(value.data(), value.data() + value.size(), out);
  if (r.ec != std::errc() || r.ptr != value.data() + value.size() || out == 0 ||
      out > kMaxSeconds) {
    throw invalid_argument_error(where, "URL parameter " + std::string(name) +
                                            " must be a whole number of seconds from 1 to " +
                                            std::to_string(kMaxSeconds) + ", got \"" +
                                            std::string(value) + "\"");
  }
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

void apply_tls_options(MYSQL* conn, const ConnectOptions& o) {
  if (!o.ssl_ca.empty()) mysql_options(conn, MYSQL_OPT_SSL_CA, o.ssl_ca.c_str());
  if (o.ssl_mode.empty()) return;
#ifdef LIBMARIADB
  // Connector/C has no ssl-mode option. MYSQL_OPT_SSL_ENFORCE asks for TLS when the server offers
  // it but does not fail when it does not (REQUIRED is checked after connecting, see
  // check_tls()); MYSQL_OPT_SSL_VERIFY_SERVER_CERT verifies the chain and the host name together
  // and fails without TLS.
  my_bool enforce = o.ssl_mode != "DISABLED";
  my_bool verify = o.ssl_mode == "VERIFY_CA" || o.ssl_mode == "VERIFY_IDENTITY";
  mysql_options(conn, MYSQL_OPT_SSL_ENFORCE, &enforce);
  mysql_options(conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
#else
  unsigned int mode = o.ssl_mode == "DISABLED"    ? SSL_MODE_DISABLED
                      : o.ssl_mode == "PREFERRED" ? SSL_MODE_PREFERRED
                      : o.ssl_mode == "REQUIRED"  ? SSL_MODE_REQUIRED
                      : o.ssl_mode == "VERIFY_CA" ? SSL_MODE_VERIFY_CA
                                                  : SSL_MODE_VERIFY_IDENTITY;
  mysql_options(conn, MYSQL_OPT_SSL_MODE, &mode);
#endif
}

}  // namespace

ConnectOptions parse_connect_options(const DatabaseUrl& url, std::string_view where) {
  ConnectOptions o;
  for (const auto& [key, value] : url.params) {
    if (key == "connect_timeout") {
      o.connect_timeout = parse_seconds(key, value, where);
    } else if (key == "read_timeout") {
      o.read_timeout = parse_seconds(key, value, where);
    } else if (key == "write_timeout") {
      o.write_timeout = parse_seconds(key, value, where);
    } else if (key == "socket" || key == "unix_socket") {
      o.socket = value;
    } else if (key == "ssl_ca") {
      o.ssl_ca = value;
    } else if (key == "ssl_mode") {
      o.ssl_mode = upper(value);
      if (o.ssl_mode != "DISABLED" && o.ssl_mode != "PREFERRED" && o.ssl_mode != "REQUIRED" &&
          o.ssl_mode != "VERIFY_CA" && o.ssl_mode != "VERIFY_IDENTITY") {
        throw invalid_argument_error(where,
                                     "URL parameter ssl_mode must be DISABLED, PREFERRED, "
                                     "REQUIRED, VERIFY_CA or VERIFY_IDENTITY, got \"" +
                                         value + "\"");
      }
    } else {
      throw invalid_argument_error(
          where, "unknown URL parameter \"" + key +
                     "\" for the libmysqlclient driver; known: connect_timeout, read_timeout, "
                     "write_timeout, socket (or unix_socket), ssl_mode, ssl_ca");
    }
  }
  return o;
}

void apply_connect_options(MYSQL* conn, const ConnectOptions& o) {
  mysql_options(conn, MYSQL_OPT_CONNECT_TIMEOUT, &o.connect_timeout);
  if (o.read_timeout) mysql_options(conn, MYSQL_OPT_READ_TIMEOUT, &*o.read_timeout);
  if (o.write_timeout) mysql_options(conn, MYSQL_OPT_WRITE_TIMEOUT, &*o.write_timeout);
  mysql_options(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  unsigned int local_infile = 0;  // a hostile server must not read client files
  mysql_options(conn, MYSQL_OPT_LOCAL_INFILE, &local_infile);
#ifdef LIBMARIADB
  // Off by default in both libraries; Oracle's prints a deprecation warning whenever it is set,
  // so it is only set explicitly here.
  my_bool reconnect = 0;
  mysql_options(conn, MYSQL_OPT_RECONNECT, &reconnect);
#endif
  apply_tls_options(conn, o);
}

void check_tls(MYSQL* conn, const ConnectOptions& o, std::string_view where) {
  bool required =
      o.ssl_mode == "REQUIRED" || o.ssl_mode == "VERIFY_CA" || o.ssl_mode == "VERIFY_IDENTITY";
  std::string_view host = conn->host == nullptr ? std::string_view() : conn->host;
  bool local_socket = host.empty() || host == "localhost";  // TLS adds nothing there
  if (required && !local_socket && mysql_get_ssl_cipher(conn) == nullptr) {
    throw connect_failed_error(where,
                               "ssl_mode=" + o.ssl_mode + " but the server does not support TLS");
  }
}

}  // namespace dblock::mysql_driver
