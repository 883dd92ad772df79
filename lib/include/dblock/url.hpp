// SPDX-License-Identifier: Apache-2.0
/// @file
/// DatabaseUrl: a parsed database URL, postgresql://user:password\@host:port/database?param=value
/// or mysql://... (also postgres:// and mariadb://). User, password and database are
/// percent-decoded; a '/', '?' or '@' in them must be percent-encoded (an '@' past the host is
/// refused). The parameters `driver` and `pool_mode` are dblock's own; the others go to the driver
/// (PostgreSQL URLs take what libpq takes, several hosts and Unix sockets included). resolve() and
/// fill_password_from_env() take a missing password from DBLOCK_PASSWORD or the file named by
/// DBLOCK_PASSWORD_FILE. Every message and every redacted() form replaces the password with "***".
///
/// @code
///   dblock::DatabaseUrl url = dblock::DatabaseUrl::parse(
///       "postgresql://app@db1:5432,db2:5433/app?target_session_attrs=read-write");
///   url.fill_password_from_env();                // DBLOCK_PASSWORD or DBLOCK_PASSWORD_FILE
///   log("locks on " + url.redacted());           // the password shown as ***
///   auto pool = dblock::open_pool(url);          // open.hpp
/// @endcode
///
/// Thread-safety: DatabaseUrl is a plain value.
///
/// Explained in docs/connections.md ("URLs").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/dialect.hpp"
#include "dblock/export.hpp"

namespace dblock {

/// A server of a PostgreSQL URL that lists several (DatabaseUrl::more_hosts).
struct HostPort {
  std::string host;  ///< as DatabaseUrl::host
  int port = 0;      ///< 0: the default port (5432)
  bool operator==(const HostPort&) const = default;
};

struct DBLOCK_EXPORT DatabaseUrl {
  Dialect dialect = Dialect::kPostgreSQL;
  std::string user;
  std::string password;
  /// The (first) server: a host name or IP address; PostgreSQL also a directory holding the
  /// server's Unix socket (it starts with '/'). Empty: the driver's default (the local socket).
  std::string host;
  int port = 0;  ///< 0: the dialect's default port
  /// PostgreSQL: the servers listed after the first (postgresql://h1:5432,h2:5433/db), which
  /// libpq tries in turn. Empty for a URL naming one server, and always for MySQL.
  std::vector<HostPort> more_hosts;
  std::string database;
  std::string driver;  ///< from ?driver=; empty: the dialect's default driver
  /// From ?pool_mode=transaction (default: session): a transaction pooler such as PgBouncer in
  /// transaction mode sits between dblock and the server, so no connection keeps a session of
  /// its own. Pools opened from such a URL open no dedicated sessions (waiters poll instead of
  /// LISTENing: a LISTEN would stay behind on a server connection the pooler hands to others).
  bool transaction_pooler = false;
  std::vector<std::pair<std::string, std::string>> params;  ///< other query parameters, in order

  /// Parses a URL. Throws Error(kInvalidArgument) naming what is wrong and showing the expected
  /// form, on one line; the message contains the URL only in redacted form.
  static DatabaseUrl parse(std::string_view url);

  /// Parses the URL in DBLOCK_URL. Throws Error(kInvalidArgument) when it is unset or empty.
  static DatabaseUrl from_env();

  /// `url` when given, else DBLOCK_URL; then fills a missing password from the environment.
  static DatabaseUrl resolve(const std::optional<std::string>& url);

  /// Fills an empty password from DBLOCK_PASSWORD or the file named by DBLOCK_PASSWORD_FILE
  /// (trailing newline removed). Throws Error(kInvalidArgument) if the file cannot be read.
  void fill_password_from_env();

  /// The value of a driver parameter, if present.
  std::optional<std::string> param(std::string_view name) const;

  /// The port to connect to (the first server's): port, or 5432 / 3306.
  int effective_port() const noexcept;

  /// The URL with the password replaced by "***"; safe to log.
  std::string redacted() const;
};

/// Replaces every occurrence of `secret` in `text` with "***" (no-op for an empty secret).
DBLOCK_EXPORT std::string scrub(std::string_view text, std::string_view secret);

}  // namespace dblock
