// SPDX-License-Identifier: Apache-2.0
// dblock::Connection over libpq itself: connect_libpq() opens one from a postgresql:// URL.
//
// A statement is one PQexecParams with text parameters and real NULLs, or one PQexec when it has
// none (the simple query protocol, so a script of several statements also runs). Nothing else
// goes over the wire, and nothing reads the socket between statements. The transaction state and
// the lost-connection rules are DriverConnection's (drivers/driver_connection.hpp); nothing here
// reopens a lost connection (a new session would not have the old one's locks). Failures are
// classified in errors.cpp.
//
// Notifications: libpq queues every notification it reads, also in the middle of a statement,
// until PQnotifies() takes it, and only wait_for_notifications() takes them. LISTEN is a plain
// statement (Connection::listen()'s default).
//
// Notices: the session's notice receiver records the warning that makes a commit doubtful (see
// is_sync_replication_cancelled) and drops every other notice, which a library has no business
// printing.
//
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#include <libpq-fe.h>

#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dblock/libpq.hpp"
#include "drivers/connect_options.hpp"
#include "drivers/driver_connection.hpp"
#include "drivers/error_mapping.hpp"
#include "drivers/libpq/conninfo.hpp"
#include "drivers/libpq/errors.hpp"
#include "drivers/libpq/notifications.hpp"
#include "drivers/libpq/result.hpp"

namespace dblock {
namespace {

struct ResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using OwnedResult = std::unique_ptr<PGresult, ResultDeleter>;

struct ConnDeleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using OwnedConn = std::unique_ptr<PGconn, ConnDeleter>;

// The rows of a statement that succeeded, and the count in its command tag.
Result statement_result(const PGresult* r) {
  // PQcmdTuples: the count in the command tag ("INSERT 0 3", "SELECT 1"), empty when none.
  std::uint64_t affected = 0;
  const std::string_view tag = PQcmdTuples(const_cast<PGresult*>(r));
  std::from_chars(tag.data(), tag.data() + tag.size(), affected);
  return libpq_driver::to_result(r, affected);
}

// Ends a COPY that a statement started, so that the connection can run the next one: dblock
// neither sends nor reads COPY data.
void abandon_copy(PGconn* pg, ExecStatusType status) {
  if (status == PGRES_COPY_IN || status == PGRES_COPY_BOTH) {
    PQputCopyEnd(pg, "COPY is not supported through dblock::Connection");
  }
  if (status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH) {
    char* buffer = nullptr;
    while (PQgetCopyData(pg, &buffer, 0) > 0) PQfreemem(buffer);
  }
  while (OwnedResult rest{PQgetResult(pg)}) {
  }
}

class LibpqConnection final : public detail::DriverConnection {
 public:
  LibpqConnection(OwnedConn conn, std::string where, std::string secret)
      : DriverConnection(std::move(where), std::move(secret)), conn_(std::move(conn)) {
    PQsetNoticeReceiver(conn_.get(), &LibpqConnection::on_notice, this);
  }
  ~LibpqConnection() override { disown_if_inherited(); }  // before PQfinish
  LibpqConnection(const LibpqConnection&) = delete;
  LibpqConnection& operator=(const LibpqConnection&) = delete;

  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }

  int native_socket() const noexcept override { return PQsocket(conn_.get()); }

  bool supports_notifications() const noexcept override { return true; }

  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout) override {
    try {
      return libpq_driver::wait_for_notifications(conn_.get(), broken(), timeout, where(),
                                                  secret());
    } catch (const Error& e) {
      fail(e);
    }
  }

  std::string describe() const override { return where() + " (libpq)"; }

 private:
  static void on_notice(void* self, const PGresult* notice) {
    const char* text = PQresultErrorMessage(notice);
    if (text != nullptr && detail::is_sync_replication_cancelled(text)) {
      static_cast<LibpqConnection*>(self)->commit_in_doubt_ = true;
    }
  }

  bool native_open() const noexcept override { return PQstatus(conn_.get()) == CONNECTION_OK; }

  bool commit_in_doubt() noexcept override { return commit_in_doubt_; }

  Result run_statement(std::string_view sql, std::span<const Value> params) override {
    PGconn* pg = conn_.get();
    commit_in_doubt_ = false;
    sql_.assign(sql);  // libpq takes NUL-terminated text
    OwnedResult result;
    if (params.empty()) {
      result.reset(PQexec(pg, sql_.c_str()));
    } else {
      texts_.resize(params.size());
      values_.resize(params.size());
      for (std::size_t i = 0; i < params.size(); ++i) {
        std::optional<std::string> text = params[i].to_text();
        if (text) {
          texts_[i] = std::move(*text);
          values_[i] = texts_[i].c_str();
        } else {
          values_[i] = nullptr;  // SQL NULL
        }
      }
      result.reset(PQexecParams(pg, sql_.c_str(), static_cast<int>(params.size()), nullptr,
                                values_.data(), nullptr, nullptr, 0));
    }
    const ExecStatusType status =
        result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result.get());
    switch (status) {
      case PGRES_COMMAND_OK:
      case PGRES_TUPLES_OK:
        return statement_result(result.get());
      case PGRES_EMPTY_QUERY:
        return Result();
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
      case PGRES_COPY_BOTH:
        abandon_copy(pg, status);
        throw detail::copy_refused_error(where());
      default:
        throw libpq_driver::statement_error(pg, result.get(), where(), secret());
    }
  }

  OwnedConn conn_;
  bool commit_in_doubt_ = false;  // set by on_notice during the current statement
  // Reused between statements: the statement's text and its parameters as libpq takes them.
  std::string sql_;
  std::vector<std::string> texts_;
  std::vector<const char*> values_;
};

}  // namespace

std::unique_ptr<Connection> connect_libpq(const DatabaseUrl& url) {
  libpq_driver::Conninfo conninfo = libpq_driver::parse_conninfo(url, "libpq");
  OwnedConn conn(PQconnectdb(conninfo.text.c_str()));
  if (conn == nullptr || PQstatus(conn.get()) != CONNECTION_OK) {
    throw libpq_driver::connect_error(conn.get(), conninfo.where, url.password);
  }
  // From here on, the one server of the URL's list that the session reached.
  const char* host = PQhost(conn.get());
  const char* db = PQdb(conn.get());
  const char* port = PQport(conn.get());
  std::string where = detail::server_location(Dialect::kPostgreSQL, host == nullptr ? "" : host,
                                              port == nullptr || *port == '\0' ? "5432" : port,
                                              db == nullptr ? "" : db);
  // A URL that sets libpq's own keepalive or TCP timeout parameters keeps them.
  if (!url.param("keepalives") && !url.param("tcp_user_timeout")) {
    detail::bound_network_waits(PQsocket(conn.get()));
  }
  auto out = std::make_unique<LibpqConnection>(std::move(conn), std::move(where), url.password);
  detail::bound_server_waits(*out, url);
  return out;
}

}  // namespace dblock
