// Connection strings for SOCI's PostgreSQL and MySQL backends (see connect_string.hpp).
//
// Thread-safety: pure functions.
#include "drivers/soci/connect_string.hpp"

#include <string>

#include "drivers/soci/errors.hpp"

namespace dblock::soci_driver {
namespace {

// Appends `key='value'` in the syntax SOCI's MySQL backend reads: single quotes, with quotes and
// backslashes escaped by a backslash.
void append_option(std::string& out, std::string_view key, std::string_view value) {
  out.append(key).append("='");
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out.append("' ");
}

bool is_keyword(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '.' || u == '_' || u == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// A libpq connection URI carrying every setting as a percent-encoded query parameter
// ("postgresql://?host=...&port=..."); URL parameters pass through as libpq keywords.
// Not the key='value' form: SOCI 4.0's PostgreSQL backend splits the connection string at every
// space (looking for its own "singlerow" option) and glues the pieces back together as
// key=value, which breaks any quoted value containing a space (a password, an application
// name). The URI form has no spaces, and it always contains a '=', which that rebuilding keeps
// intact.
std::string postgresql_connect_string(const DatabaseUrl& url, std::string_view where) {
  std::string out = "postgresql://";
  char sep = '?';
  auto add = [&](std::string_view key, std::string_view value) {
    out.append(1, sep).append(key).append("=").append(percent_encode(value));
    sep = '&';
  };
  if (!url.host.empty()) add("host", url.host);
  add("port", std::to_string(url.effective_port()));
  if (!url.user.empty()) add("user", url.user);
  if (!url.password.empty()) add("password", url.password);
  if (!url.database.empty()) add("dbname", url.database);
  if (!url.param("connect_timeout")) add("connect_timeout", "10");
  add("fallback_application_name", "dblock");
  for (const auto& [key, value] : url.params) {
    if (!is_keyword(key)) {
      throw invalid_argument_error(
          where, "URL parameter \"" + key + "\" is not a libpq connection keyword");
    }
    add(key, value);
  }
  return out;
}

// SOCI's MySQL keys. SOCI rejects unknown keys and repeated ones, so only a documented set of
// URL parameters is accepted.
std::string mysql_connect_string(const DatabaseUrl& url, std::string_view where) {
  std::string out;
  if (!url.host.empty()) append_option(out, "host", url.host);
  append_option(out, "port", std::to_string(url.effective_port()));
  if (!url.user.empty()) append_option(out, "user", url.user);
  if (!url.password.empty()) append_option(out, "password", url.password);
  if (!url.database.empty()) append_option(out, "db", url.database);
  append_option(out, "charset", "utf8mb4");
  if (!url.param("connect_timeout")) append_option(out, "connect_timeout", "10");
  for (const auto& [key, value] : url.params) {
    if (key == "connect_timeout" || key == "read_timeout" || key == "write_timeout") {
      bool valid = !value.empty() && value.size() <= 9 &&
                   value.find_first_not_of("0123456789") == std::string::npos &&
                   std::stoul(value) > 0;
      if (!valid) {
        throw invalid_argument_error(
            where, "URL parameter \"" + key + "\" must be a positive number of seconds");
      }
      append_option(out, key, value);
    } else if (key == "socket" || key == "unix_socket") {
      append_option(out, "unix_socket", value);
    } else {
      throw invalid_argument_error(
          where, "URL parameter \"" + key +
                     "\" is not supported by the SOCI MySQL driver (supported: connect_timeout, "
                     "read_timeout, write_timeout, socket)");
    }
  }
  return out;
}

}  // namespace dblock::soci_driver
