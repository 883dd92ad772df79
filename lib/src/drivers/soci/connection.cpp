// SPDX-License-Identifier: Apache-2.0
// dblock::Connection over SOCI 4.0 and 4.1 (PostgreSQL and MySQL backends): wrap_soci() adapts a
// session the service owns, connect_soci() opens one from a URL.
//
// Statements: SOCI binds by name, so the dialect's placeholders ($1.. or ?) become :p1, :p2 ..
// and each parameter is bound with soci::use under that name (NULL with soci::i_null). SOCI
// scans the SQL for :name itself, skipping only '...' (and "..." on PostgreSQL), so comments are
// removed first: a ':' or an apostrophe in a comment would otherwise be read as a parameter or a
// string (on MySQL, a statement without parameters would be cut at such a ':'). SQL handed to
// this driver must not contain ':' inside MySQL "..." strings or `...` names, nor inside
// PostgreSQL dollar-quoted bodies other than as '::' or ':='.
// Each statement runs once (st_one_time_query: PQexecParams or mysql_real_query, no named
// prepared statement) without into elements, and its rows are read as text off the result the
// backend keeps (PGresult, MYSQL_RES: postgresql_native.cpp, mysql_native.hpp), as the server
// sent them. Not through a dynamic soci::row: SOCI 4.1 describes a statement into a row before
// and, when it found no columns, again after executing it, and describing runs the statement,
// so every statement without a result set (an INSERT, an UPDATE) would run twice.
//
// Affected rows on MySQL: dblock counts MATCHED rows. SOCI's MySQL backend (4.0 and 4.1) opens
// every session with CLIENT_FOUND_ROWS | CLIENT_MULTI_RESULTS (see mysql_real_connect in its
// session.cpp; verified against the Debian 4.0.3 binary, which passes 0x20002), so
// mysql_affected_rows(), and hence statement::get_affected_rows(), already counts matched rows,
// for sessions opened here and for the service's own sessions alike.
//
// On MySQL, the Result of a statement without a result set carries mysql_insert_id() of the
// native MYSQL* (SOCI runs each statement with mysql_real_query, parameters substituted on the
// client); after a SELECT the client library still holds the previous statement's value, so it
// is reported as 0 there.
//
// The transaction state and the lost-connection rules are DriverConnection's
// (drivers/driver_connection.hpp): nothing here reopens a lost connection. Failures are
// classified in errors.cpp.
//
// PostgreSQL notifications are handled on the native libpq handles too.
//
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dblock/soci.hpp"
#include "drivers/connect_options.hpp"
#include "drivers/driver_connection.hpp"
#include "drivers/error_mapping.hpp"
#include "drivers/libpq/notifications.hpp"
#include "drivers/mysql_socket.hpp"
#include "drivers/mysql_transaction.hpp"
#include "drivers/placeholders.hpp"
#include "drivers/soci/connect_string.hpp"
#include "drivers/soci/errors.hpp"
#include "drivers/soci/mysql_native.hpp"
#include "drivers/soci/postgresql_native.hpp"
#include "drivers/soci/session_info.hpp"
#include "libpq_uri.hpp"
#include "sql_scanner.hpp"

namespace dblock {
namespace {

std::string_view or_empty(const char* s) { return s == nullptr ? std::string_view() : s; }

PGconn* pg_conn(soci::session& session) {
  auto* backend = static_cast<soci::postgresql_session_backend*>(session.get_backend());
  return backend == nullptr ? nullptr : backend->conn_;
}

MYSQL* mysql_conn(soci::session& session) {
  auto* backend = static_cast<soci::mysql_session_backend*>(session.get_backend());
  return backend == nullptr ? nullptr : backend->conn_;
}

// The SQL as SOCI wants it: :pN placeholders and no comments (MySQL's /*! ... */ and /*+ ... */
// stay, as they are not plain comments). `placeholders` receives how many parameters it takes.
std::string to_soci_sql(std::string_view sql, Dialect dialect, std::size_t& placeholders) {
  std::string named = detail::to_named_placeholders(sql, dialect, &placeholders);
  std::vector<bool> code(named.size(), false);
  detail::for_each_code_char(named, dialect,
                             [&](std::size_t& i, bool in_code) { code[i] = in_code; });
  std::string out;
  out.reserve(named.size());
  std::string_view text = named;
  for (std::size_t i = 0; i < text.size();) {
    bool region_start = !code[i] && (i == 0 || code[i - 1]);
    std::string_view rest = text.substr(i);
    std::size_t end = std::string_view::npos;
    if (region_start &&
        (rest.starts_with("--") || (dialect == Dialect::kMySQL && rest[0] == '#'))) {
      end = text.find('\n', i);  // the newline stays
      if (end == std::string_view::npos) end = text.size();
    } else if (region_start && rest.starts_with("/*") &&
               !(dialect == Dialect::kMySQL &&
                 (rest.starts_with("/*!") || rest.starts_with("/*+")))) {
      end = text.find("*/", i + 2);
      end = end == std::string_view::npos ? text.size() : end + 2;
    }
    if (end == std::string_view::npos) {
      out += text[i++];
    } else {
      out += ' ';
      i = end;
    }
  }
  return out;
}

// Watches a PostgreSQL session's notices for the one that makes a successful commit doubtful
// (detail::is_sync_replication_cancelled), passing each on to libpq's default receiver, which
// ignores its argument. Installed only on sessions dblock opened: libpq does not tell which
// argument a receiver the owner of a wrapped session set expects.
struct NoticeWatch {
  PQnoticeReceiver previous = nullptr;
  bool cancelled = false;

  static void receive(void* arg, const PGresult* result) {
    auto* watch = static_cast<NoticeWatch*>(arg);
    const char* message = PQresultErrorMessage(result);
    if (message != nullptr && detail::is_sync_replication_cancelled(message)) {
      watch->cancelled = true;
    }
    if (watch->previous != nullptr) watch->previous(nullptr, result);
  }
};

class SociConnection final : public detail::DriverConnection {
 public:
  SociConnection(soci::session& session, std::unique_ptr<soci::session> owned, Dialect dialect,
                 std::string where, std::string secret)
      : DriverConnection(std::move(where), std::move(secret)),
        owned_(std::move(owned)),
        session_(session),
        dialect_(dialect) {
    if (dialect_ == Dialect::kMySQL) server_ = detail::mysql_server(mysql_conn(session_));
    if (owned_ && dialect_ == Dialect::kPostgreSQL) {
      if (PGconn* pg = pg_conn(session_); pg != nullptr) {
        notice_watch_ = std::make_unique<NoticeWatch>();
        notice_watch_->previous =
            PQsetNoticeReceiver(pg, &NoticeWatch::receive, notice_watch_.get());
      }
    }
  }

  ~SociConnection() override { disown_if_inherited(); }  // before the session closes
  SociConnection(const SociConnection&) = delete;
  SociConnection& operator=(const SociConnection&) = delete;

  Dialect dialect() const noexcept override { return dialect_; }
  Server server() const noexcept override {
    return dialect_ == Dialect::kPostgreSQL ? Server::kPostgreSQL : server_;
  }

  int native_socket() const noexcept override {
    if (session_.get_backend() == nullptr) return -1;
    if (dialect_ == Dialect::kPostgreSQL) return PQsocket(pg_conn(session_));
    return detail::mysql_socket(mysql_conn(session_));
  }

  bool supports_notifications() const noexcept override { return dialect_ == Dialect::kPostgreSQL; }

  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout) override {
    if (dialect_ != Dialect::kPostgreSQL) return Connection::wait_for_notifications(timeout);
    PGconn* pg = session_.get_backend() == nullptr ? nullptr : pg_conn(session_);
    try {
      return libpq_driver::wait_for_notifications(pg, broken(), timeout, where(), secret());
    } catch (const Error& e) {
      fail(e);
    }
  }

  std::string describe() const override { return where() + " (soci)"; }

 private:
  bool native_open() const noexcept override {
    if (session_.get_backend() == nullptr) return false;
    PGconn* pg = dialect_ == Dialect::kPostgreSQL ? pg_conn(session_) : nullptr;
    // As the libpq driver's: a socket libpq already closed, before it marked the status bad,
    // is not an open connection.
    return pg == nullptr || (PQstatus(pg) != CONNECTION_BAD && PQsocket(pg) >= 0);
  }

  // What the driver can tell about the connection after a failure without asking the server.
  bool still_open() const noexcept {
    if (session_.get_backend() == nullptr) return false;
    PGconn* pg = dialect_ == Dialect::kPostgreSQL ? pg_conn(session_) : nullptr;
    return dialect_ != Dialect::kPostgreSQL || (pg != nullptr && PQstatus(pg) == CONNECTION_OK);
  }

  bool server_ended_transaction(const Error* failure) noexcept override {
    MYSQL* my = dialect_ == Dialect::kMySQL ? mysql_conn(session_) : nullptr;
    return my != nullptr && detail::mysql_transaction_ended(my, failure);
  }

  // libpq knows whether the server failed the transaction; a failure the client raised before
  // sending anything does not count.
  bool transaction_failed() const noexcept override {
    PGconn* pg = dialect_ == Dialect::kPostgreSQL ? pg_conn(session_) : nullptr;
    return pg != nullptr && PQtransactionStatus(pg) == PQTRANS_INERROR;
  }

  bool commit_in_doubt() noexcept override { return notice_watch_ && notice_watch_->cancelled; }

  Result run_statement(std::string_view sql, std::span<const Value> params) override {
    if (notice_watch_) notice_watch_->cancelled = false;
    std::size_t placeholders = 0;
    std::string query = to_soci_sql(sql, dialect_, placeholders);
    // SOCI would ignore a parameter no placeholder names; the other drivers' servers refuse it.
    if (!params.empty() && params.size() != placeholders) {
      throw detail::driver_error(ErrorCode::kInvalidArgument, where(),
                                 "the statement takes " + std::to_string(placeholders) +
                                     " parameter(s) and was given " + std::to_string(params.size()),
                                 {});
    }
    // Storage the use elements point into; sized up front so nothing moves while bound.
    const std::size_t n = params.size();
    std::vector<std::string> names(n);
    std::vector<soci::indicator> indicators(n, soci::i_ok);
    std::vector<long long> integers(n);
    std::vector<double> doubles(n);
    std::vector<std::string> texts(n);
    try {
      soci::statement st(session_);
      for (std::size_t i = 0; i < n; ++i) {
        // Built by appending to the empty name, not "p" + std::to_string(...) nor = "p": GCC 12
        // reports a false -Wrestrict for those in Release builds.
        names[i].push_back('p');
        names[i] += std::to_string(i + 1);
        const Value::Storage& v = params[i].storage();
        if (const auto* integer = std::get_if<std::int64_t>(&v)) {
          integers[i] = *integer;
          st.exchange(soci::use(integers[i], indicators[i], names[i]));
        } else if (const auto* d = std::get_if<double>(&v); d && dialect_ == Dialect::kMySQL) {
          // MySQL reads SOCI's "%.20g" as an exact DECIMAL literal of the double's value.
          doubles[i] = *d;
          st.exchange(soci::use(doubles[i], indicators[i], names[i]));
        } else if (const auto* s = std::get_if<std::string>(&v)) {
          st.exchange(soci::use(*s, indicators[i], names[i]));
        } else {
          // NULL, or a double on PostgreSQL: untyped text there, as libpq sends it, so the
          // server reads the same shortest exact form the other drivers send.
          std::optional<std::string> text = params[i].to_text();
          if (text) {
            texts[i] = std::move(*text);
          } else {
            indicators[i] = soci::i_null;
          }
          st.exchange(soci::use(texts[i], indicators[i], names[i]));
        }
      }
      st.alloc();
      st.prepare(query, soci::details::st_one_time_query);
      st.define_and_bind();
      try {
        st.execute(false);  // sends it; the rows stay in the backend's result
      } catch (const soci::soci_error&) {
        if (dialect_ == Dialect::kPostgreSQL && still_open() && soci_driver::answered_copy(st)) {
          throw detail::copy_refused_error(where());
        }
        throw;
      }
      if (dialect_ == Dialect::kPostgreSQL) return soci_driver::postgresql_result(st);
      if (std::optional<Result> rows = soci_driver::mysql_rows(st)) return std::move(*rows);
      // No result set. After a SELECT the client library still holds the previous statement's
      // insert id, so it is reported only here.
      long long count = st.get_affected_rows();
      MYSQL* my = mysql_conn(session_);
      return Result({}, {}, count > 0 ? static_cast<std::uint64_t>(count) : 0,
                    my == nullptr ? 0 : mysql_insert_id(my));
    } catch (const Error&) {
      throw;  // already dblock's (a COPY refused)
    } catch (const std::exception& e) {
      throw soci_driver::statement_error(e, dialect_, still_open(), where(), secret());
    }
  }

  // Declared first: the session it watches goes before it.
  std::unique_ptr<NoticeWatch> notice_watch_;
  std::unique_ptr<soci::session> owned_;  // null for a wrapped session
  soci::session& session_;
  Dialect dialect_;
  Server server_ = Server::kMySQL;  // MySQL dialect: which server (the PostgreSQL one says so)
};

}  // namespace

namespace soci_driver {

Dialect dialect_of(soci::session& session) {
  if (session.get_backend() == nullptr) {
    throw invalid_argument_error("SOCI session", "the session is not open");
  }
  std::string name = session.get_backend_name();
  if (name == "postgresql") return Dialect::kPostgreSQL;
  if (name == "mysql") return Dialect::kMySQL;
  throw invalid_argument_error("SOCI session", "backend \"" + name +
                                                   "\" is not supported (use postgresql or "
                                                   "mysql)");
}

std::string location_of(soci::session& session, Dialect dialect) {
  if (dialect == Dialect::kPostgreSQL) {
    PGconn* conn = pg_conn(session);
    if (conn == nullptr) return detail::server_location(dialect, {}, {}, {});
    return detail::server_location(dialect, or_empty(PQhost(conn)), or_empty(PQport(conn)),
                                   or_empty(PQdb(conn)));
  }
  MYSQL* conn = mysql_conn(session);
  if (conn == nullptr) return detail::server_location(dialect, {}, {}, {});
  return detail::server_location(dialect, or_empty(conn->host), std::to_string(conn->port),
                                 or_empty(conn->db));
}

}  // namespace soci_driver

std::unique_ptr<Connection> wrap_soci(soci::session& session) {
  Dialect dialect = soci_driver::dialect_of(session);
  return std::make_unique<SociConnection>(
      session, nullptr, dialect, soci_driver::location_of(session, dialect), std::string());
}

std::unique_ptr<Connection> connect_soci(const DatabaseUrl& url) {
  Dialect dialect = url.dialect;
  std::string where =
      dialect == Dialect::kPostgreSQL
          ? detail::postgresql_location(url)
          : detail::server_location(dialect, url.host, std::to_string(url.effective_port()),
                                    url.database);
  std::string connect_string = dialect == Dialect::kPostgreSQL
                                   ? soci_driver::postgresql_connect_string(url)
                                   : soci_driver::mysql_connect_string(url, where);
  std::unique_ptr<soci::session> session;
  try {
    if (dialect == Dialect::kPostgreSQL) {
      session = std::make_unique<soci::session>(soci::postgresql, connect_string);
    } else {
      session = std::make_unique<soci::session>(soci::mysql, connect_string);
    }
  } catch (const std::exception& e) {
    // libpq may echo the URI; scrub() removes the percent-encoded password as well.
    throw soci_driver::connect_error(e, dialect, where, url.password);
  }
  soci::session& ref = *session;
  auto conn =
      std::make_unique<SociConnection>(ref, std::move(session), dialect, where, url.password);
  if (dialect == Dialect::kPostgreSQL) {
    // Keep libpq from printing NOTICEs ("relation ... already exists, skipping") to stderr.
    PQsetNoticeProcessor(
        pg_conn(ref), [](void*, const char*) {}, nullptr);
    if (!url.param("keepalives") && !url.param("tcp_user_timeout")) {
      detail::bound_network_waits(PQsocket(pg_conn(ref)));
    }
    detail::bound_server_waits(*conn, url);
  } else {
    // Programs the service starts must not inherit the session (libpq sets this itself).
    detail::set_close_on_exec(detail::mysql_socket(mysql_conn(ref)));
    detail::bound_network_waits(detail::mysql_socket(mysql_conn(ref)));
    // dblock's MySQL SQL works in UTC; sessions the service opens keep their own time zone.
    conn->execute("SET time_zone = '+00:00'");
  }
  return conn;
}

}  // namespace dblock
