// SPDX-License-Identifier: Apache-2.0
// dblock::Connection over the libmysqlclient API (MariaDB Connector/C or Oracle's
// libmysqlclient): wrap_mysql() adapts a handle the service owns, connect_mysql() opens one from a
// mysql:// URL.
//
// Statements with parameters run as server-side prepared statements, kept in a small per-
// connection cache (drivers/statement_cache.hpp) so a repeated statement is one round trip;
// parameters are bound natively (int64, double, text, NULL) and every result column is fetched as
// text. Statements without parameters (DDL, SET, START TRANSACTION, ...) go through the text
// protocol, as do statements the server cannot prepare. The Result of a statement without a result
// set carries mysql_insert_id() / mysql_stmt_insert_id() (the LAST_INSERT_ID(expr) value of an
// INSERT or UPDATE that set one); after a SELECT the client library still holds the previous
// statement's value, so it is reported as 0 there. The transaction state, the transactions the
// server ends on its own (mysql_transaction.hpp) and the lost-connection rules are
// DriverConnection's (drivers/driver_connection.hpp); auto-reconnect is off, since a silent
// reconnect would drop transactions and locks. Failures are classified in errors.cpp.
//
// Thread-safety: one thread at a time (see dblock/connection.hpp). The client library is
// initialised once per process, before the first handle is created.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dblock/libmysqlclient.hpp"
#include "drivers/connect_options.hpp"
#include "drivers/driver_connection.hpp"
#include "drivers/libmysqlclient/connect_options.hpp"
#include "drivers/libmysqlclient/errors.hpp"
#include "drivers/libmysqlclient/prepared_statement.hpp"
#include "drivers/mysql_rows.hpp"
#include "drivers/mysql_socket.hpp"
#include "drivers/mysql_transaction.hpp"
#include "drivers/statement_cache.hpp"
#include "sql_scanner.hpp"

namespace dblock {
namespace {

using mysql_driver::client_error;
using mysql_driver::connection_error;
using mysql_driver::invalid_argument_error;
using mysql_driver::statement_error;

constexpr std::size_t kStatementCacheSize = 64;

// Closes a cached statement; a failure (the connection gone, say) still frees the handle.
struct CloseStatement {
  void operator()(MYSQL_STMT* stmt) const noexcept { mysql_stmt_close(stmt); }
};

std::string_view or_empty(const char* s) { return s == nullptr ? std::string_view() : s; }

// mysql_library_init() is not thread-safe: run it once, before the first mysql_init(). Each
// thread that uses the library also gets mysql_thread_init() / mysql_thread_end() (no-ops in
// MariaDB Connector/C; Oracle's library wants them in every thread that uses a handle).
void enter_library(std::string_view where) {
  static std::once_flag once;
  static int init_result = 0;
  std::call_once(once, [] { init_result = mysql_library_init(0, nullptr, nullptr); });
  if (init_result != 0) throw client_error(where, "mysql_library_init() failed");
  struct ThreadInit {
    ThreadInit() { mysql_thread_init(); }
    ~ThreadInit() { mysql_thread_end(); }
  };
  thread_local ThreadInit thread_init;
}

// "MariaDB 127.0.0.1:3306/app", "MySQL [::1]:3306/app", "MariaDB unix:/run/mysqld.sock/app".
std::string location(std::string_view flavor, std::string_view host, unsigned int port,
                     std::string_view socket, std::string_view database) {
  std::string out(flavor);
  out += ' ';
  if (host.empty() || host == "localhost") {
    if (socket.empty()) {
      out += "localhost (default socket)";
    } else {
      out.append("unix:").append(socket);
    }
  } else if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]:").append(std::to_string(port));
  } else {
    out.append(host).append(":").append(std::to_string(port));
  }
  out.append("/").append(database);
  return out;
}

std::string_view flavor_of(MYSQL* conn) {
  return detail::mysql_server(conn) == Server::kMariaDB ? "MariaDB" : "MySQL";
}

std::string location_of(MYSQL* conn) {
  return location(flavor_of(conn), or_empty(conn->host), conn->port, or_empty(conn->unix_socket),
                  or_empty(conn->db));
}

// A value as an SQL literal in the connection's character set, for statements the server cannot
// prepare. Text goes as a hex literal with a charset introducer, so no escaping rule (and no
// sql_mode such as NO_BACKSLASH_ESCAPES) matters.
std::string literal(const Value& value, std::string_view charset, std::string_view where) {
  const Value::Storage& v = value.storage();
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) {
      throw invalid_argument_error(where, "MySQL has no literal for an infinite or NaN double");
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, *d);  // shortest form that reads back exactly
    return std::string(buf, r.ptr);
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  const std::string& s = std::get<std::string>(v);
  std::string out = "_";
  out.append(charset).append(" X'");
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  out += '\'';
  return out;
}

class MysqlConnection final : public detail::DriverConnection {
 public:
  MysqlConnection(MYSQL* conn, bool owned, std::string where, std::string secret)
      : DriverConnection(std::move(where), std::move(secret)),
        conn_(conn),
        owned_(owned),
        server_(detail::mysql_server(conn)),
        statements_(kStatementCacheSize, CloseStatement{}) {}

  ~MysqlConnection() override {
    disown_if_inherited();  // a forked child sends nothing below on the parent's socket
    // A wrapped handle lives on: leave it outside any transaction this object opened.
    if (!owned_) rollback();
    statements_.clear();
    if (owned_) mysql_close(conn_);
  }

  Dialect dialect() const noexcept override { return Dialect::kMySQL; }
  Server server() const noexcept override { return server_; }
  int native_socket() const noexcept override { return detail::mysql_socket(conn_); }
  std::string describe() const override { return where() + " (libmysqlclient)"; }

 private:
  Result run_statement(std::string_view sql, std::span<const Value> params) override {
    enter_library(where());
    return params.empty() ? run_text(sql) : run_prepared(sql, params);
  }

  bool server_ended_transaction(const Error* failure) noexcept override {
    return detail::mysql_transaction_ended(conn_, failure);
  }

  // The text protocol (COM_QUERY): one round trip, results arrive as text.
  Result run_text(std::string_view sql) {
    if (mysql_real_query(conn_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
      throw connection_error(conn_, where(), secret());
    }
    Result result;
    MYSQL_RES* res = mysql_store_result(conn_);
    if (res == nullptr) {
      if (mysql_field_count(conn_) != 0) throw connection_error(conn_, where(), secret());
      result = Result({}, {}, mysql_affected_rows(conn_), mysql_insert_id(conn_));
    } else {
      std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> guard(res, mysql_free_result);
      unsigned int count = mysql_num_fields(res);
      MYSQL_FIELD* fields = mysql_fetch_fields(res);
      std::vector<std::string> columns;
      columns.reserve(count);
      for (unsigned int i = 0; i < count; ++i) {
        columns.emplace_back(fields[i].name, fields[i].name_length);
      }
      std::vector<Result::Row> rows = detail::mysql_fetch_all(res, count);
      std::uint64_t n = rows.size();
      result = Result(std::move(columns), std::move(rows), n);
    }
    // Further result sets (a CALL) are read and dropped so the connection stays in sync.
    while (mysql_more_results(conn_)) {
      int rc = mysql_next_result(conn_);
      if (rc > 0) throw connection_error(conn_, where(), secret());
      if (rc < 0) break;
      if (MYSQL_RES* extra = mysql_store_result(conn_)) mysql_free_result(extra);
    }
    return result;
  }

  // A cached prepared statement (COM_STMT_EXECUTE); prepared on first use.
  Result run_prepared(std::string_view sql, std::span<const Value> params) {
    for (int attempt = 0;; ++attempt) {
      MYSQL_STMT* const* cached = statements_.find(sql);
      MYSQL_STMT* stmt = cached == nullptr ? nullptr : *cached;
      if (stmt == nullptr) {
        stmt = prepare(sql);
        if (stmt == nullptr) return run_text(inline_params(sql, params));
        statements_.insert(std::string(sql), stmt);
      }
      if (mysql_stmt_param_count(stmt) != params.size()) {
        throw invalid_argument_error(
            where(), "the statement has " + std::to_string(mysql_stmt_param_count(stmt)) +
                         " placeholders but " + std::to_string(params.size()) +
                         " parameters were given");
      }
      std::optional<Result> result = mysql_driver::run_statement(stmt, params);
      if (result) return std::move(*result);

      unsigned int err = mysql_driver::statement_errno(stmt);
      Error error = statement_error(stmt, where(), secret());
      bool stale = mysql_driver::is_stale_statement(err);
      if (stale || error.code() == ErrorCode::kConnectionLost) statements_.erase(sql);
      if (stale && attempt == 0) continue;  // prepare it again, once
      throw error;
    }
  }

  // A new prepared statement, or nullptr when the server cannot prepare this statement.
  MYSQL_STMT* prepare(std::string_view sql) {
    MYSQL_STMT* stmt = mysql_stmt_init(conn_);
    if (stmt == nullptr) throw connection_error(conn_, where(), secret());
    if (mysql_stmt_prepare(stmt, sql.data(), static_cast<unsigned long>(sql.size())) == 0) {
      return stmt;
    }
    unsigned int err = mysql_driver::statement_errno(stmt);
    Error error = statement_error(stmt, where(), secret());
    mysql_stmt_close(stmt);
    if (mysql_driver::is_unsupported_prepare(err)) return nullptr;
    throw error;
  }

  // The statement with each ? (outside strings, identifiers and comments) replaced by its value.
  std::string inline_params(std::string_view sql, std::span<const Value> params) {
    std::string_view charset = or_empty(mysql_character_set_name(conn_));
    if (charset.empty()) charset = "utf8mb4";
    std::string out;
    out.reserve(sql.size() + 16 * params.size());
    std::size_t next = 0;
    detail::for_each_code_char(sql, Dialect::kMySQL, [&](std::size_t& i, bool in_code) {
      if (in_code && sql[i] == '?') {
        if (next < params.size()) out += literal(params[next], charset, where());
        ++next;
      } else {
        out += sql[i];
      }
    });
    if (next != params.size()) {
      throw invalid_argument_error(
          where(), "the statement has " + std::to_string(next) + " placeholders but " +
                       std::to_string(params.size()) + " parameters were given");
    }
    return out;
  }

  MYSQL* conn_;
  bool owned_;
  Server server_;
  detail::StatementCache<MYSQL_STMT*, CloseStatement> statements_;
};

struct MysqlCloser {
  void operator()(MYSQL* conn) const noexcept { mysql_close(conn); }
};

}  // namespace

std::unique_ptr<Connection> wrap_mysql(MYSQL* conn) {
  std::string_view generic = "MySQL (wrapped libmysqlclient connection)";
  if (conn == nullptr) throw invalid_argument_error(generic, "wrap_mysql() got a null MYSQL*");
  enter_library(generic);
  std::string where = location_of(conn);
  if ((conn->client_flag & CLIENT_FOUND_ROWS) == 0) {
    throw invalid_argument_error(
        where,
        "wrap_mysql() needs a connection opened with CLIENT_FOUND_ROWS: pass CLIENT_FOUND_ROWS "
        "in the client_flag argument of mysql_real_connect() (dblock reads matched rows to "
        "tell whether a lease is still held)");
  }
#ifdef LIBMARIADB
  my_bool reconnect = 0;
  if (mysql_get_option(conn, MYSQL_OPT_RECONNECT, &reconnect) == 0 && reconnect) {
    throw invalid_argument_error(
        where,
        "wrap_mysql() needs auto-reconnect off (MYSQL_OPT_RECONNECT): a silent reconnect would "
        "drop dblock's transactions and locks");
  }
#endif
  return std::make_unique<MysqlConnection>(conn, false, std::move(where),
                                           std::string(or_empty(conn->passwd)));
}

std::unique_ptr<Connection> connect_mysql(const DatabaseUrl& url) {
  unsigned int port = static_cast<unsigned int>(url.effective_port());
  std::string where = location("MySQL", url.host, port, "", url.database);
  if (url.dialect != Dialect::kMySQL) {
    throw invalid_argument_error(where, "the libmysqlclient driver needs a mysql:// URL");
  }
  mysql_driver::ConnectOptions options = mysql_driver::parse_connect_options(url, where);
  where = location("MySQL", url.host, port, options.socket, url.database);
  enter_library(where);

  std::unique_ptr<MYSQL, MysqlCloser> conn(mysql_init(nullptr));
  if (!conn) throw client_error(where, "mysql_init() failed (out of memory)");
  mysql_driver::apply_connect_options(conn.get(), options);
  auto c_str = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  if (mysql_real_connect(conn.get(), c_str(url.host), c_str(url.user), c_str(url.password),
                         c_str(url.database), port, c_str(options.socket),
                         CLIENT_FOUND_ROWS) == nullptr) {
    throw mysql_driver::connect_error(conn.get(), where, url.password, url.database);
  }
  mysql_driver::check_tls(conn.get(), options, where);
  detail::set_close_on_exec(detail::mysql_socket(conn.get()));
  detail::bound_network_waits(detail::mysql_socket(conn.get()));
  where = location_of(conn.get());
  auto out =
      std::make_unique<MysqlConnection>(conn.release(), true, std::move(where), url.password);
  out->execute("SET time_zone = '+00:00'");
  return out;
}

}  // namespace dblock
