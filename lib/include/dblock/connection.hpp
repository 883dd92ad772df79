// SPDX-License-Identifier: Apache-2.0
/// @file
/// The driver interface: one database connection, as dblock's strategies and migrator use it.
///
/// A Connection runs one statement at a time with bound parameters and classifies every failure
/// into a dblock::Error (see error.hpp). Drivers implement it over libpq, libpqxx, libmysqlclient
/// and SOCI; a service may also implement it over its own client library.
///
/// Placeholders are the dialect's own: $1, $2, ... on PostgreSQL; ? on MySQL/MariaDB. Drivers
/// that speak another style (SOCI's :name) translate.
///
/// Thread-safety: a Connection is not thread-safe. Use one from one thread at a time; share
/// connections between threads through a ConnectionSource (connection_source.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dblock/dialect.hpp"
#include "dblock/export.hpp"

namespace dblock {

/// A bound parameter: NULL, a 64-bit integer, a double, or text (bytes, UTF-8 expected).
class DBLOCK_EXPORT Value {
 public:
  using Storage = std::variant<std::monostate, std::int64_t, double, std::string>;

  Value() = default;  ///< NULL
  Value(std::nullptr_t) {}
  Value(int v) : v_(static_cast<std::int64_t>(v)) {}
  Value(long v) : v_(static_cast<std::int64_t>(v)) {}
  Value(long long v) : v_(static_cast<std::int64_t>(v)) {}
  Value(double v) : v_(v) {}
  Value(std::string v) : v_(std::move(v)) {}
  Value(std::string_view v) : v_(std::string(v)) {}
  Value(const char* v) : v_(std::string(v)) {}

  bool is_null() const noexcept { return std::holds_alternative<std::monostate>(v_); }
  const Storage& storage() const noexcept { return v_; }
  /// The value as SQL text (integers and doubles formatted exactly); empty optional for NULL.
  std::optional<std::string> to_text() const;

 private:
  Storage v_;
};

/// The rows a statement returned (all values as text; NULL as an empty optional), the column
/// names, and the number of rows the statement affected. On MySQL, affected rows count matched
/// rows (drivers connect with CLIENT_FOUND_ROWS), as on PostgreSQL.
class DBLOCK_EXPORT Result {
 public:
  using Row = std::vector<std::optional<std::string>>;

  Result() = default;
  Result(std::vector<std::string> columns, std::vector<Row> rows, std::uint64_t affected_rows,
         std::uint64_t last_insert_id = 0)
      : columns_(std::move(columns)),
        rows_(std::move(rows)),
        affected_rows_(affected_rows),
        last_insert_id_(last_insert_id) {}

  std::size_t size() const noexcept { return rows_.size(); }
  bool empty() const noexcept { return rows_.empty(); }
  const std::vector<std::string>& columns() const noexcept { return columns_; }
  const std::vector<Row>& rows() const noexcept { return rows_; }
  std::uint64_t affected_rows() const noexcept { return affected_rows_; }
  /// MySQL only: the value the statement left in LAST_INSERT_ID() (mysql_insert_id()), which
  /// carries a value back from a statement that cannot return rows (LAST_INSERT_ID(expr) in
  /// INSERT ... ON DUPLICATE KEY UPDATE). 0 on PostgreSQL.
  std::uint64_t last_insert_id() const noexcept { return last_insert_id_; }

  /// Index of a column by name; throws Error(kFailedPrecondition) when absent.
  std::size_t column(std::string_view name) const;
  /// Cell access; throws Error(kFailedPrecondition) when out of range.
  const std::optional<std::string>& at(std::size_t row, std::size_t col) const;
  const std::optional<std::string>& at(std::size_t row, std::string_view col) const {
    return at(row, column(col));
  }
  /// Cell as an integer; throws Error(kFailedPrecondition) when NULL or not an integer.
  std::int64_t int64_at(std::size_t row, std::size_t col) const;
  std::int64_t int64_at(std::size_t row, std::string_view col) const {
    return int64_at(row, column(col));
  }

 private:
  std::vector<std::string> columns_;
  std::vector<Row> rows_;
  std::uint64_t affected_rows_ = 0;
  std::uint64_t last_insert_id_ = 0;
};

/// A PostgreSQL notification (NOTIFY channel, 'payload') received by a LISTENing session.
struct Notification {
  std::string channel;
  std::string payload;
};

class DBLOCK_EXPORT Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  virtual Dialect dialect() const noexcept = 0;

  /// Which server this connection talks to. The default says kPostgreSQL or kMySQL by dialect;
  /// a driver that can tell MariaDB from MySQL (dblock's own drivers read the version the server
  /// sent when the session opened) overrides it. A MariaDB server reported as kMySQL still works:
  /// dblock then bounds row-lock waits the MySQL 8.0 way (the session's
  /// innodb_lock_wait_timeout, in whole seconds) instead of to the millisecond.
  virtual Server server() const noexcept {
    return dialect() == Dialect::kPostgreSQL ? Server::kPostgreSQL : Server::kMySQL;
  }

  /// Runs one statement with bound parameters and returns its rows and affected-row count.
  /// Throws Error with a classified code; after kConnectionLost, broken() is true.
  virtual Result execute(std::string_view sql, std::span<const Value> params) = 0;
  Result execute(std::string_view sql) { return execute(sql, {}); }
  Result execute(std::string_view sql, std::initializer_list<Value> params) {
    return execute(sql, std::span<const Value>(params.begin(), params.size()));
  }

  /// Transaction control. begin() fails if a transaction is already open on this connection.
  virtual void begin() = 0;
  virtual void commit() = 0;
  /// Never throws; a rollback on a broken connection just marks nothing open.
  virtual void rollback() noexcept = 0;
  virtual bool in_transaction() const noexcept = 0;

  /// True once the connection is known to be unusable (lost, closed). Pools discard such
  /// connections instead of reusing them.
  virtual bool broken() const noexcept = 0;

  /// The connection's socket descriptor, or -1 when the driver has none to offer. dblock only
  /// polls it, without reading, to notice a server that closed the session (peer_closed()).
  virtual int native_socket() const noexcept { return -1; }

  /// PostgreSQL LISTEN/NOTIFY. A driver that can wait for notifications returns true here; the
  /// session then LISTENs with listen(channel) and calls wait_for_notifications(). Others return
  /// false and callers fall back to polling.
  virtual bool supports_notifications() const noexcept { return false; }
  /// Starts listening on `channel`, so that wait_for_notifications() returns the notifications
  /// sent to it. The name is taken exactly (case kept) and must be an identifier as
  /// quote_identifier() accepts it (table_names.hpp). Listening twice on one channel is harmless;
  /// inside a transaction the LISTEN takes effect at its commit, as the server's own does. A
  /// driver may need to know the channels (libpqxx does): LISTEN through here, not through
  /// execute(). The default runs LISTEN "channel" with execute().
  /// Throws Error(kFailedPrecondition) when supports_notifications() is false,
  /// Error(kInvalidArgument) for a name that is not an identifier, and what execute() throws
  /// (kConnectionLost once the connection is lost). Not thread-safe, as execute().
  virtual void listen(std::string_view channel);
  /// Waits up to `timeout` for notifications on the channels this session listens to and returns
  /// those received (empty on timeout). Throws Error(kConnectionLost) if the session broke, and
  /// Error(kFailedPrecondition) when supports_notifications() is false.
  virtual std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout);

  /// Where this connection points, safe to print: "PostgreSQL 127.0.0.1:5432/app (libpqxx)".
  /// Never contains a password.
  virtual std::string describe() const = 0;
};

}  // namespace dblock
