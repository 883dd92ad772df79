// SPDX-License-Identifier: Apache-2.0
// dblock::Connection over libpq itself: connect_libpq() opens one from a postgresql:// URL.
//
// A statement with parameters runs as a prepared statement of the session (PQexecPrepared, text
// parameters and real NULLs), prepared on its first use and kept in a small per-connection cache
// (drivers/statement_cache.hpp), so the server parses and plans a statement dblock sends again
// and again once per session instead of at every execution (for a fair release that is most of
// the server's work: about 0.9 ms of planning against 0.25 ms of execution). Behind a transaction
// pooler (pool_mode=transaction), where the next statement may reach another server session,
// each runs as one PQexecParams instead. A statement without parameters is one PQexec (the simple
// query protocol, so a script of several statements also runs). Nothing else goes over the wire,
// and nothing reads the socket between statements. The transaction state and
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
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
#include "drivers/statement_cache.hpp"

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

constexpr std::size_t kStatementCacheSize = 64;

// SQLSTATEs after which a cached statement is prepared again: 26000, the session has no
// statement of that name (a service's DEALLOCATE ALL or DISCARD ALL on a connection it shares);
// 0A000, among others "cached plan must not change result type" (a table changed under it).
bool is_stale_statement(const PGresult* r) {
  const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
  return state != nullptr &&
         (std::string_view(state) == "26000" || std::string_view(state) == "0A000");
}

class LibpqConnection final : public detail::DriverConnection {
 public:
  // `prepare`: statements with parameters run as prepared statements (not behind a transaction
  // pooler).
  LibpqConnection(OwnedConn conn, std::string where, std::string secret, bool prepare)
      : DriverConnection(std::move(where), std::move(secret)),
        conn_(std::move(conn)),
        prepare_(prepare),
        statements_(kStatementCacheSize, Deallocate{this}) {
    PQsetNoticeReceiver(conn_.get(), &LibpqConnection::on_notice, this);
  }
  ~LibpqConnection() override {
    disown_if_inherited();  // before PQfinish
    closing_ = true;        // the session's end drops its prepared statements
  }
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

  // Open while the status says so and the socket is still there. libpq, meeting the server's
  // close in a statement, closes the socket first and marks the status bad after
  // (pqDropConnection, then CONNECTION_BAD): a lease's lost() asked from another thread in
  // between saw an open connection whose socket no probe could read (or whose number a new
  // socket already reused), and so not the end the server had already acted on. The status is
  // read first, so that a drop between the two reads counts as closed.
  bool native_open() const noexcept override {
    return PQstatus(conn_.get()) == CONNECTION_OK && PQsocket(conn_.get()) >= 0;
  }

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
      result = prepare_
                   ? run_prepared(pg, static_cast<int>(params.size()))
                   : OwnedResult(PQexecParams(pg, sql_.c_str(), static_cast<int>(params.size()),
                                              nullptr, values_.data(), nullptr, nullptr, 0));
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

  // sql_ with values_ as the session's prepared statement, prepared first if the cache has none:
  // the result of the execution, or of the PREPARE that failed. A statement found stale is
  // prepared again and run once more, outside a transaction only (inside one, its failure
  // already ended the transaction).
  OwnedResult run_prepared(PGconn* pg, int n) {
    for (int attempt = 0;; ++attempt) {
      const bool in_transaction = PQtransactionStatus(pg) != PQTRANS_IDLE;
      const std::string* name = statements_.find(sql_);
      if (name == nullptr) {
        std::string fresh = "dblock_" + std::to_string(++prepared_);
        OwnedResult prepared(PQprepare(pg, fresh.c_str(), sql_.c_str(), n, nullptr));
        if (prepared == nullptr || PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
          return prepared;
        }
        statements_.insert(sql_, std::move(fresh));
        name = statements_.find(sql_);
      }
      OwnedResult result(PQexecPrepared(pg, name->c_str(), n, values_.data(), nullptr, nullptr, 0));
      if (!is_stale_statement(result.get())) return result;
      statements_.erase(sql_);
      if (attempt > 0 || in_transaction) return result;
    }
  }

  // Drops a statement the cache lets go of (a DEALLOCATE whose failure, on a broken connection
  // or in a failed transaction, only leaves it to the session's end).
  struct Deallocate {
    LibpqConnection* self;
    void operator()(const std::string& name) const noexcept {
      if (self->closing_ || self->broken()) return;
      PQclear(PQexec(self->conn_.get(), ("DEALLOCATE " + name).c_str()));
    }
  };

  OwnedConn conn_;
  const bool prepare_;
  bool closing_ = false;
  std::uint64_t prepared_ = 0;  // names the session's statements: dblock_1, dblock_2, ...
  detail::StatementCache<std::string, Deallocate> statements_;
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
  auto out = std::make_unique<LibpqConnection>(std::move(conn), std::move(where), url.password,
                                               !url.transaction_pooler);
  detail::bound_server_waits(*out, url);
  return out;
}

}  // namespace dblock
