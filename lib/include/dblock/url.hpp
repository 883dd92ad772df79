// Database URLs: postgresql://user:password@host:port/database?param=value and
// mysql://user:password@host:port/database?param=value (also postgres:// and mariadb://).
//
// User, password and database are percent-decoded; a '/', '?' or '@' in them must be
// percent-encoded, and a URL with an '@' past the host is refused (it would otherwise read part
// of a password as host, port, database or parameter). The query parameter `driver` picks the
// driver (libpq, libpqxx, libmysqlclient or soci) and `pool_mode` (session or transaction) says
// whether a transaction pooler stands in front; all other parameters go to the driver. When the URL
// carries no password, DBLOCK_PASSWORD or the file named by DBLOCK_PASSWORD_FILE supplies it,
// so passwords can stay out of command lines and crontabs.
//
// Every message and every redacted() form replaces the password with "***".
//
// Thread-safety: DatabaseUrl is a plain value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"

namespace dblock {

struct DBLOCK_EXPORT DatabaseUrl {
  Dialect dialect = Dialect::kPostgreSQL;
  std::string user;
  std::string password;
  std::string host;  // empty: the driver's default (local socket)
  int port = 0;      // 0: the dialect's default port
  std::string database;
  std::string driver;  // from ?driver=; empty: the dialect's default driver
  // From ?pool_mode=transaction (default: session): a transaction pooler such as PgBouncer in
  // transaction mode sits between dblock and the server, so no connection keeps a session of
  // its own. Pools opened from such a URL open no dedicated sessions (waiters poll instead of
  // LISTENing: a LISTEN would stay behind on a server connection the pooler hands to others).
  bool transaction_pooler = false;
  std::vector<std::pair<std::string, std::string>> params;  // other query parameters, in order

  // Parses a URL. Throws Error(kInvalidArgument) naming what is wrong and showing the expected
  // form, on one line; the message contains the URL only in redacted form.
  static DatabaseUrl parse(std::string_view url);

  // Parses the URL in DBLOCK_URL. Throws Error(kInvalidArgument) when it is unset or empty.
  static DatabaseUrl from_env();

  // `url` when given, else DBLOCK_URL; then fills a missing password from the environment.
  static DatabaseUrl resolve(const std::optional<std::string>& url);

  // Fills an empty password from DBLOCK_PASSWORD or the file named by DBLOCK_PASSWORD_FILE
  // (trailing newline removed). Throws Error(kInvalidArgument) if the file cannot be read.
  void fill_password_from_env();

  // The value of a driver parameter, if present.
  std::optional<std::string> param(std::string_view name) const;

  // The port to connect to: port, or 5432 / 3306.
  int effective_port() const noexcept;

  // The URL with the password replaced by "***"; safe to log.
  std::string redacted() const;
};

// Replaces every occurrence of `secret` in `text` with "***" (no-op for an empty secret).
DBLOCK_EXPORT std::string scrub(std::string_view text, std::string_view secret);

}  // namespace dblock
