// SPDX-License-Identifier: Apache-2.0
#include "dblock/url.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dblock/error.hpp"
#include "escaped_text.hpp"
#include "url_encoding.hpp"

namespace dblock {

namespace {

constexpr std::string_view kExpected =
    "expected postgresql://user:password@host:port/database or "
    "mysql://user:password@host:port/database";

// The input with anything that may be a password replaced, for error messages about a URL that
// did not parse. When the shape is unclear, nothing of the input is shown. The user information
// is taken to end at the last '@' anywhere, so a password with an unescaped '/', '?' or '@' is
// hidden too.
std::string redact_raw(std::string_view url) {
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return url.find('@') == std::string_view::npos && url.find(':') == std::string_view::npos
               ? std::string(url)
               : std::string("(not shown)");
  }
  std::size_t auth_start = scheme_end + 3;
  std::string out(url.substr(0, auth_start));
  std::string_view rest = url.substr(auth_start);
  auto at = rest.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    auto colon = userinfo.find(':');
    out += userinfo.substr(0, std::min(colon, userinfo.find_first_of("/?")));
    if (colon != std::string_view::npos) out += ":***";
    rest = rest.substr(at);
  }
  out += rest.substr(0, rest.find('?'));  // parameters are not shown: they may hold secrets
  if (rest.find('?') != std::string_view::npos) out += "?...";
  return out;
}

[[noreturn]] void fail(std::string_view url, std::string_view what) {
  throw Error(ErrorCode::kInvalidArgument,
              detail::escaped_text("invalid database URL '" + redact_raw(url) +
                                       "': " + std::string(what) + "; " + std::string(kExpected),
                                   detail::Bytes::kControlsOnly));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view url, std::string_view part, std::string_view name) {
  std::string out;
  out.reserve(part.size());
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') {
      out += part[i];
      continue;
    }
    int hi = i + 2 < part.size() ? hex_value(part[i + 1]) : -1;
    int lo = i + 2 < part.size() ? hex_value(part[i + 2]) : -1;
    if (hi < 0 || lo < 0) fail(url, std::string("bad percent-escape in the ") + std::string(name));
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (out.find('\0') != std::string::npos) {
    fail(url, std::string("the ") + std::string(name) + " contains a NUL byte");
  }
  return out;
}

// One host[:port] of a URL's authority: [IPv6]:port, name:port or a percent-encoded socket
// directory (PostgreSQL). Either part may be empty.
HostPort parse_host_port(std::string_view url, std::string_view text, Dialect dialect) {
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {  // [IPv6]:port
    auto close = text.find(']');
    if (close == std::string_view::npos) fail(url, "unterminated '[' in the host");
    out.host = percent_decode(url, text.substr(1, close - 1), "host");
    std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') fail(url, "unexpected text after ']' in the host");
      port_text = after.substr(1);
      if (port_text.empty()) fail(url, "empty port after ':'");
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos &&
        text.substr(0, colon).find(':') != std::string_view::npos) {
      fail(url, "an IPv6 address as the host must be in brackets: [::1]:5432");
    }
    out.host = percent_decode(url, text.substr(0, colon), "host");
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      if (port_text.empty()) fail(url, "empty port after ':'");
    }
  }
  // A PostgreSQL host that starts with '/' is the directory of the server's Unix socket.
  const bool socket_directory = dialect == Dialect::kPostgreSQL && out.host.starts_with('/');
  for (char c : out.host) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '@' || c == ',' ||
        (c == '/' && !socket_directory)) {
      fail(url, "the host contains an invalid character");
    }
  }
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535) {
        fail(url, "the port '" + std::string(port_text) + "' is not a number from 1 to 65535");
      }
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) {
      fail(url, "the port '" + std::string(port_text) + "' is not a number from 1 to 65535");
    }
    out.port = port;
  }
  return out;
}

}  // namespace

DatabaseUrl DatabaseUrl::parse(std::string_view url) {
  if (url.empty()) fail(url, "the URL is empty");
  DatabaseUrl out;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) fail(url, "missing '://' after the scheme");
  std::string scheme(url.substr(0, scheme_end));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "postgresql" || scheme == "postgres") {
    out.dialect = Dialect::kPostgreSQL;
  } else if (scheme == "mysql" || scheme == "mariadb") {
    out.dialect = Dialect::kMySQL;
  } else {
    fail(url, "unsupported scheme '" + scheme + "'");
  }

  std::string_view rest = url.substr(scheme_end + 3);
  std::size_t auth_end = rest.find_first_of("/?");
  // An '@' past the host means a user name or password holding a raw '/' or '?': parsing on
  // would read part of the password as host, port, database or parameter, and show it.
  if (auth_end != std::string_view::npos && rest.find('@', auth_end) != std::string_view::npos) {
    fail(url,
         "an '@' follows the host; percent-encode '/', '?' and '@' in the user name, password "
         "and database (%2F, %3F, %40)");
  }
  std::string_view authority = rest.substr(0, auth_end);
  rest = auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);

  auto at = authority.rfind('@');
  std::string_view hostport = authority;
  if (at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    hostport = authority.substr(at + 1);
    auto colon = userinfo.find(':');
    out.user = percent_decode(url, userinfo.substr(0, colon), "user name");
    if (colon != std::string_view::npos) {
      out.password = percent_decode(url, userinfo.substr(colon + 1), "password");
    }
    if (out.user.empty()) fail(url, "the user name before '@' is empty");
  }

  // (No capital Q in messages: the URL fuzzer marks passwords with it.)
  if (hostport.find(',') != std::string_view::npos && out.dialect == Dialect::kMySQL) {
    fail(url, "several hosts; a mysql:// URL names one host");
  }
  // PostgreSQL: host[:port] entries separated by ',' (libpq's multi-host form).
  for (std::size_t begin = 0;;) {
    const std::size_t comma = hostport.find(',', begin);
    HostPort entry = parse_host_port(url, hostport.substr(begin, comma - begin), out.dialect);
    if (begin == 0) {
      out.host = std::move(entry.host);
      out.port = entry.port;
    } else {
      out.more_hosts.push_back(std::move(entry));
    }
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }

  std::string_view query;
  if (!rest.empty() && rest.front() == '/') {
    auto q = rest.find('?');
    out.database = percent_decode(url, rest.substr(1, q == std::string_view::npos ? q : q - 1),
                                  "database name");
    if (out.database.find('/') != std::string::npos) fail(url, "the database name contains '/'");
    query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
  } else if (!rest.empty()) {  // starts with '?'
    query = rest.substr(1);
  }

  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      fail(url,
           "query parameter '" + std::string(pair.substr(0, eq)) + "' needs the form name=value");
    }
    std::string name = percent_decode(url, pair.substr(0, eq), "parameter name");
    std::string value = percent_decode(url, pair.substr(eq + 1), "parameter value");
    if (name == "password") fail(url, "put the password in the user part or in DBLOCK_PASSWORD");
    if (name == "driver") {
      out.driver = value;
    } else if (name == "pool_mode") {
      if (value != "session" && value != "transaction") {
        fail(url, "pool_mode must be session or transaction, not '" + value + "'");
      }
      out.transaction_pooler = value == "transaction";
    } else {
      out.params.emplace_back(std::move(name), std::move(value));
    }
  }
  return out;
}

DatabaseUrl DatabaseUrl::from_env() {
  const char* env = std::getenv("DBLOCK_URL");
  if (env == nullptr || *env == '\0') {
    throw Error(ErrorCode::kInvalidArgument,
                "no database URL: pass --url or set DBLOCK_URL (" + std::string(kExpected) + ")");
  }
  return parse(env);
}

DatabaseUrl DatabaseUrl::resolve(const std::optional<std::string>& url) {
  DatabaseUrl out = url && !url->empty() ? parse(*url) : from_env();
  out.fill_password_from_env();
  return out;
}

void DatabaseUrl::fill_password_from_env() {
  if (!password.empty()) return;
  if (const char* pw = std::getenv("DBLOCK_PASSWORD"); pw != nullptr && *pw != '\0') {
    password = pw;
    return;
  }
  const char* file = std::getenv("DBLOCK_PASSWORD_FILE");
  if (file == nullptr || *file == '\0') return;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw Error(ErrorCode::kInvalidArgument, "cannot read DBLOCK_PASSWORD_FILE '" +
                                                 std::string(file) +
                                                 "': check that it exists and is readable");
  }
  std::ostringstream text;
  text << in.rdbuf();
  password = text.str();
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
    password.pop_back();
  }
}

std::optional<std::string> DatabaseUrl::param(std::string_view name) const {
  for (const auto& [k, v] : params) {
    if (k == name) return v;
  }
  return std::nullopt;
}

int DatabaseUrl::effective_port() const noexcept {
  if (port != 0) return port;
  return dialect == Dialect::kPostgreSQL ? 5432 : 3306;
}

std::string DatabaseUrl::redacted() const {
  std::string out(dialect == Dialect::kPostgreSQL ? "postgresql://" : "mysql://");
  if (!user.empty()) {
    out += detail::percent_encode(user);
    if (!password.empty()) out += ":***";
    out += '@';
  }
  out += detail::url_host(host, port);
  for (const HostPort& more : more_hosts) {
    out += ',';
    out += detail::url_host(more.host, more.port);
  }
  out += '/';
  out += detail::percent_encode(database);
  char sep = '?';
  if (!driver.empty()) {
    out += "?driver=";
    out += detail::percent_encode(driver);
    sep = '&';
  }
  if (transaction_pooler) {
    out += sep;
    out += "pool_mode=transaction";
    sep = '&';
  }
  for (const auto& [k, v] : params) {
    out += sep;
    // libpq's sslpassword unlocks the client's key: a secret too.
    out +=
        detail::percent_encode(k) + "=" + (k == "sslpassword" ? "***" : detail::percent_encode(v));
    sep = '&';
  }
  return out;
}

std::string scrub(std::string_view text, std::string_view secret) {
  std::string out(text);
  if (secret.empty()) return out;
  for (const std::string& s : {std::string(secret), detail::percent_encode(secret)}) {
    for (std::size_t pos = out.find(s); pos != std::string::npos; pos = out.find(s, pos + 3)) {
      out.replace(pos, s.size(), "***");
    }
  }
  return out;
}

namespace detail {

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string url_host(std::string_view host, int port) {
  std::string out;
  // Appends only, no replace() or "literal" + string: GCC 12 reports a false -Wrestrict for
  // those in optimised builds, which -DDBLOCK_WERROR=ON turns into a failed build.
  if (host.find(':') != std::string_view::npos) {  // an IPv6 address, in brackets, ':' kept
    const std::string encoded = percent_encode(host);
    out += '[';
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      if (encoded.compare(i, 3, "%3A") == 0) {
        out += ':';
        i += 2;
      } else {
        out += encoded[i];
      }
    }
    out += ']';
  } else {
    out += percent_encode(host);  // a socket directory's '/' as %2F
  }
  if (port != 0) {
    out += ':';
    out += std::to_string(port);
  }
  return out;
}

}  // namespace detail
}  // namespace dblock
