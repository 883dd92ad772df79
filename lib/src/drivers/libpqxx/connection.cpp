// SPDX-License-Identifier: Apache-2.0
// dblock::Connection over libpqxx 6.4, 7.x and 8.x: wrap_pqxx() adapts a connection the service
// owns, connect_pqxx() opens one from a postgresql:// URL. What differs between those versions
// is in compat.hpp.
//
// Every statement runs in a fresh pqxx::nontransaction, which costs no round trip of its own:
// with parameters through one PQexecParams (text parameters, real NULLs), without them through
// the simple query protocol (so a multi-statement script also runs). The transaction state and
// the lost-connection rules are DriverConnection's (drivers/driver_connection.hpp); nothing here
// reopens a lost connection (libpqxx 6 would otherwise reconnect silently, dropping session
// state such as advisory locks). Failures are classified in errors.cpp.
//
// Notifications (LISTEN/NOTIFY) are never lost between statements and waits: libpq queues every
// notification it reads, whenever it reads one (also in the middle of a statement), until
// PQnotifies() takes it. libpqxx calls PQnotifies() only in connection::get_notifs(), and there
// only while no pqxx transaction object is open on the connection; it hands each notification
// to the subscriber of its channel (a notification_receiver before libpqxx 7.10, a handler given
// to connection::listen() from 7.10) and drops it if there is none. Every statement here runs
// inside a pqxx::nontransaction, so libpqxx leaves the queue alone during execute(), and
// wait_for_notifications() is the one place this driver calls get_notifs(). So that
// get_notifs() finds a subscriber for every channel, LISTEN must go through listen(), which runs
// the LISTEN statement and then subscribes to the channel (ChannelSubscriptions, appending to
// pending_). libpqxx sends LISTEN once more itself when it subscribes: one extra round trip per
// channel and session, harmless. A LISTEN sent with execute() takes effect on the server, but
// its notifications are dropped.
//
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dblock/libpqxx.hpp"
#include "dblock/table_names.hpp"
#include "drivers/connect_options.hpp"
#include "drivers/driver_connection.hpp"
#include "drivers/error_mapping.hpp"
#include "drivers/libpq/conninfo.hpp"
#include "drivers/libpqxx/compat.hpp"
#include "drivers/libpqxx/errors.hpp"

namespace dblock {
namespace {

std::string_view or_empty(const char* s) { return s == nullptr ? std::string_view() : s; }

// Where a pqxx connection points.
std::string location_of(PqxxConnectionBase& conn) {
  std::string_view host = or_empty(conn.hostname());  // opens a lazy connection
  return detail::server_location(Dialect::kPostgreSQL, host, pqxx_driver::port_of(conn),
                                 or_empty(conn.dbname()));
}

// Rows and fields by index: libpqxx 8 iterates a result as row_ref/field_ref, 6.4 and 7.x as
// row/field; r[i][c] has is_null(), c_str() and size() in each.
Result to_result(const pqxx::result& r) {
  const pqxx::row_size_type width = r.columns();
  std::vector<std::string> columns;
  columns.reserve(width);
  for (pqxx::row_size_type c = 0; c < width; ++c) columns.emplace_back(r.column_name(c));
  std::vector<Result::Row> rows;
  rows.reserve(r.size());
  for (pqxx::result::size_type i = 0; i < r.size(); ++i) {
    Result::Row& out = rows.emplace_back();
    out.reserve(width);
    for (pqxx::row_size_type c = 0; c < width; ++c) {
      const auto f = r[i][c];
      if (f.is_null()) {
        out.emplace_back();
      } else {
        out.emplace_back(std::string(f.c_str(), f.size()));
      }
    }
  }
  return Result(std::move(columns), std::move(rows), r.affected_rows());
}

// Watches the server's notices for the one that makes a successful commit doubtful (see
// is_sync_replication_cancelled); every notice also goes on to older handlers.
class SyncReplicationWatch final : public pqxx_driver::NoticeWatch {
 public:
  explicit SyncReplicationWatch(PqxxConnectionBase& conn) : NoticeWatch(conn) {}
  bool operator()(const char msg[]) noexcept override {
    if (detail::is_sync_replication_cancelled(msg)) cancelled = true;
    return true;
  }
  bool cancelled = false;
};

class PqxxConnection final : public detail::DriverConnection {
 public:
  PqxxConnection(PqxxConnectionBase& conn, std::unique_ptr<pqxx::connection> owned,
                 std::string where, std::string secret)
      : DriverConnection(std::move(where), std::move(secret)),
        owned_(std::move(owned)),
        conn_(conn),
        sync_watch_(conn),
        pending_(std::make_shared<std::vector<Notification>>()),
        subscriptions_(conn, pending_) {}

  ~PqxxConnection() override {
    disown_if_inherited();  // a forked child sends nothing below on the parent's socket
    // Closing first ends the subscriptions without an UNLISTEN each. On a wrapped connection
    // they send it (libpqxx does not reconnect a broken connection for that; a failure is
    // swallowed).
    if (owned_) pqxx_driver::close(*owned_);
    subscriptions_.clear();
  }

  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }

  int native_socket() const noexcept override {
    try {
      return conn_.is_open() ? conn_.sock() : -1;
    } catch (...) {
      return -1;
    }
  }

  bool supports_notifications() const noexcept override { return true; }

  // Runs LISTEN, then subscribes to the channel unless it is subscribed already (see the file
  // comment).
  void listen(std::string_view channel) override {
    execute("LISTEN " + quote_identifier(Dialect::kPostgreSQL, channel));
    std::string name(channel);
    if (subscriptions_.contains(name)) return;
    try {
      subscriptions_.add(name);
    } catch (const std::exception& e) {
      fail_statement(pqxx_driver::statement_error(e, conn_.is_open(), where(), secret()));
    }
    // libpqxx swallows a broken connection while it sends LISTEN.
    if (!conn_.is_open()) fail(detail::lost_error(where()));
  }

  // Notifications already queued (by libpq, during earlier statements) come back at once;
  // otherwise waits on the socket. Notifications received before the connection broke are
  // returned first; the next call then reports the loss.
  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout) override {
    using Clock = std::chrono::steady_clock;
    if (pending_->empty() && broken()) fail(detail::lost_error(where()));
    const Clock::time_point deadline = Clock::now() + std::max(timeout, timeout.zero());
    try {
      for (;;) {
        // Reads whatever the socket holds and hands every queued notification to the
        // receivers. Never reconnects: it does nothing on a closed connection.
        if (conn_.is_open()) conn_.get_notifs();
        if (!pending_->empty() || !conn_.is_open()) break;
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (left <= left.zero()) break;
        pollfd pfd{conn_.sock(), POLLIN, 0};
        if (pfd.fd < 0) break;
        int ms = static_cast<int>(std::min<std::chrono::milliseconds::rep>(left.count(), INT_MAX));
        if (::poll(&pfd, 1, ms) < 0 && errno != EINTR) {
          throw std::runtime_error(std::string("poll() failed: ") + std::strerror(errno));
        }
      }
    } catch (const std::exception& e) {
      if (pending_->empty()) {
        fail(detail::notification_wait_error(detail::libpq_message_text(e.what()), conn_.is_open(),
                                             where(), secret()));
      }
    }
    if (pending_->empty() && !conn_.is_open()) {
      fail(detail::notification_wait_error({}, false, where(), secret()));
    }
    return std::exchange(*pending_, {});
  }

  std::string describe() const override { return where() + " (libpqxx)"; }

 private:
  // As the libpq driver's: a socket libpq already closed, before it marked the status bad, is
  // not an open connection.
  bool native_open() const noexcept override { return conn_.is_open() && conn_.sock() >= 0; }

  bool commit_in_doubt() noexcept override { return sync_watch_.cancelled; }

  Result run_statement(std::string_view sql, std::span<const Value> params) override {
    std::vector<std::optional<std::string>> texts;
    texts.reserve(params.size());
    for (const Value& v : params) texts.push_back(v.to_text());
    sync_watch_.cancelled = false;
    pqxx::result r;
    try {
      // Not committed: a nontransaction's commit and abort send nothing, so letting it end in
      // its destructor is the same and cannot fail after the statement succeeded.
      pqxx::nontransaction tx(conn_);
      r = texts.empty() ? tx.exec(std::string(sql))
                        : pqxx_driver::exec_with_params(tx, std::string(sql), texts);
    } catch (const std::exception& e) {
      throw pqxx_driver::statement_error(e, conn_.is_open(), where(), secret());
    }
    try {
      return to_result(r);
    } catch (const pqxx::range_error& e) {
      // A result with a column that has no name: what a COPY answers. libpq ends the COPY at the
      // next statement, so the connection goes on (if it is still open).
      if (!conn_.is_open()) throw pqxx_driver::statement_error(e, false, where(), secret());
      throw detail::copy_refused_error(where());
    }
  }

  std::unique_ptr<pqxx::connection> owned_;  // null for a wrapped connection
  PqxxConnectionBase& conn_;
  SyncReplicationWatch sync_watch_;  // unregisters before owned_ goes
  // Notifications handed over by the subscriptions, not yet returned.
  std::shared_ptr<std::vector<Notification>> pending_;
  pqxx_driver::ChannelSubscriptions subscriptions_;
};

}  // namespace

std::unique_ptr<Connection> wrap_pqxx(PqxxConnectionBase& conn) {
  std::string where;
  try {
    where = location_of(conn);
  } catch (const std::exception& e) {
    throw pqxx_driver::connect_error(e, "PostgreSQL (wrapped libpqxx connection)", {});
  }
  return std::make_unique<PqxxConnection>(conn, nullptr, std::move(where), std::string());
}

std::unique_ptr<Connection> connect_pqxx(const DatabaseUrl& url) {
  std::string port = std::to_string(url.effective_port());
  std::string where = detail::server_location(Dialect::kPostgreSQL, url.host, port, url.database);
  const std::string conninfo = libpq_driver::conninfo(url, where, "libpqxx");

  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(conninfo);
    where = location_of(*conn);
  } catch (const std::exception& e) {
    throw pqxx_driver::connect_error(e, where, url.password);
  }
  pqxx::connection& ref = *conn;
  // A URL that sets libpq's own keepalive or TCP timeout parameters keeps them.
  if (!url.param("keepalives") && !url.param("tcp_user_timeout")) {
    detail::bound_network_waits(ref.sock());
  }
  auto out = std::make_unique<PqxxConnection>(ref, std::move(conn), std::move(where), url.password);
  detail::bound_server_waits(*out, url);
  return out;
}

}  // namespace dblock
