// dblock::Connection over libpqxx 6.4: wrap_pqxx() adapts a connection the service owns,
// connect_pqxx() opens one from a postgresql:// URL.
//
// Every execute() runs in a fresh pqxx::nontransaction, which costs no round trip of its own:
// with parameters through exec_params (PQexecParams: text parameters, real NULLs), without them
// through the simple query protocol (so a multi-statement script also runs). BEGIN, COMMIT and
// ROLLBACK are plain statements and this class tracks whether a transaction is open. A
// connection found lost stays broken: nothing here reopens it (libpqxx would otherwise reconnect
// silently, dropping session state such as advisory locks). Failures are classified in
// errors.cpp.
//
// Notifications (LISTEN/NOTIFY) are never lost between statements and waits: libpq queues every
// notification it reads, whenever it reads one (also in the middle of a statement), until
// PQnotifies() takes it. libpqxx calls PQnotifies() only in connection_base::get_notifs(), and
// there only while no pqxx transaction object is open on the connection; it hands each
// notification to the pqxx::notification_receivers registered for its channel and drops it if
// there are none. Every statement here runs inside a pqxx::nontransaction, so libpqxx leaves the
// queue alone during execute(), and wait_for_notifications() is the one place this driver calls
// get_notifs(). So that get_notifs() finds a receiver for every channel, execute() registers
// one (ChannelReceiver, appending to pending_) as soon as a LISTEN statement has succeeded. The
// receiver's constructor sends LISTEN once more itself: one extra round trip per channel and
// session, harmless. Channels come from the statement ("LISTEN name", "LISTEN \"Name\""); after
// any other statement that mentions LISTEN (U&"..." names, comments, several statements), from
// pg_listening_channels(), which misses a LISTEN inside a transaction block not yet committed.
//
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/errorhandler>
#include <pqxx/nontransaction>
#include <pqxx/notification>
#include <pqxx/prepared_statement>
#include <pqxx/result>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dblock/libpqxx.hpp"
#include "driver_support.hpp"
#include "drivers/libpqxx/errors.hpp"
#include "sql_scanner.hpp"

namespace dblock {
namespace {

// "PostgreSQL host:port/database"; IPv6 hosts in brackets.
std::string location(std::string_view host, std::string_view port, std::string_view database) {
  std::string out = "PostgreSQL ";
  if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]");
  } else {
    out.append(host.empty() ? std::string_view("(default socket)") : host);
  }
  out.append(":").append(port).append("/").append(database);
  return out;
}

std::string_view or_empty(const char* s) { return s == nullptr ? std::string_view() : s; }

// Where a pqxx connection points.
std::string location_of(pqxx::connection_base& conn) {
  std::string_view host = or_empty(conn.hostname());  // opens a lazy connection
  return location(host, or_empty(conn.port()), or_empty(conn.dbname()));
}

Result to_result(const pqxx::result& r) {
  std::vector<std::string> columns;
  columns.reserve(r.columns());
  for (pqxx::row_size_type c = 0; c < r.columns(); ++c) columns.emplace_back(r.column_name(c));
  std::vector<Result::Row> rows;
  rows.reserve(r.size());
  for (const pqxx::row& row : r) {
    Result::Row& out = rows.emplace_back();
    out.reserve(row.size());
    for (const pqxx::field& f : row) {
      if (f.is_null()) {
        out.emplace_back();
      } else {
        out.emplace_back(std::string(f.c_str(), f.size()));
      }
    }
  }
  return Result(std::move(columns), std::move(rows), r.affected_rows());
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

bool is_word_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' ||
         u == '$' || u >= 0x80;
}

// Whether `text` starts with the keyword `lower_keyword`, in any case.
bool starts_with_keyword(std::string_view text, std::string_view lower_keyword) {
  if (text.size() < lower_keyword.size()) return false;
  for (std::size_t k = 0; k < lower_keyword.size(); ++k) {
    char c = text[k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower_keyword[k]) return false;
  }
  return text.size() == lower_keyword.size() || !is_word_char(text[lower_keyword.size()]);
}

// The channel of a statement "LISTEN name" or "LISTEN \"Name\"" (optional ';' and spaces), as
// the server names it: unquoted names folded to lower case, at most 63 bytes. nullopt for any
// other statement.
std::optional<std::string> listen_channel(std::string_view sql) {
  constexpr std::size_t kMaxIdentifierBytes = 63;  // NAMEDATALEN - 1
  std::size_t i = 0;
  auto skip_spaces = [&] {
    while (i < sql.size() && is_space(sql[i])) ++i;
  };
  skip_spaces();
  if (!starts_with_keyword(sql.substr(i), "listen")) return std::nullopt;
  i += std::string_view("listen").size();
  skip_spaces();
  std::string name;
  if (i < sql.size() && sql[i] == '"') {
    for (++i;; ++i) {
      if (i >= sql.size()) return std::nullopt;  // unterminated
      if (sql[i] == '"') {
        if (i + 1 < sql.size() && sql[i + 1] == '"') {
          name += '"';
          ++i;
        } else {
          ++i;
          break;
        }
      } else {
        name += sql[i];
      }
    }
  } else {
    if (i >= sql.size() || !is_word_char(sql[i]) || sql[i] == '$' ||
        (sql[i] >= '0' && sql[i] <= '9')) {
      return std::nullopt;
    }
    for (; i < sql.size() && is_word_char(sql[i]); ++i) {
      char c = sql[i];
      name += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  skip_spaces();
  if (i < sql.size() && sql[i] == ';') ++i;
  skip_spaces();
  if (i != sql.size() || name.empty()) return std::nullopt;
  if (name.size() > kMaxIdentifierBytes) {
    // PostgreSQL truncates long names, at a character boundary.
    std::size_t cut = kMaxIdentifierBytes;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);
  }
  return name;
}

// Whether the keyword LISTEN appears in `sql` outside strings, quoted names and comments.
bool mentions_listen(std::string_view sql) {
  bool found = false;
  detail::for_each_code_char(sql, Dialect::kPostgreSQL, [&](std::size_t& i, bool in_code) {
    if (in_code && !found && (i == 0 || !is_word_char(sql[i - 1]))) {
      found = starts_with_keyword(sql.substr(i), "listen");
    }
  });
  return found;
}

// Hands the notifications of one channel to the connection's queue (see the file comment).
class ChannelReceiver final : public pqxx::notification_receiver {
 public:
  // Sends LISTEN (unless a receiver for the channel exists on `conn` already).
  ChannelReceiver(pqxx::connection_base& conn, const std::string& channel,
                  std::vector<Notification>& sink)
      : pqxx::notification_receiver(conn, channel), sink_(sink) {}

  void operator()(const std::string& payload, int /*backend_pid*/) override {
    sink_.push_back(Notification{channel(), payload});
  }

 private:
  std::vector<Notification>& sink_;
};

// Watches the server's notices for the one that makes a successful commit doubtful (see
// is_sync_replication_cancelled); every notice also goes on to older handlers.
class SyncReplicationWatch final : public pqxx::errorhandler {
 public:
  explicit SyncReplicationWatch(pqxx::connection_base& conn) : pqxx::errorhandler(conn) {}
  bool operator()(const char msg[]) noexcept override {
    if (detail::is_sync_replication_cancelled(msg)) cancelled = true;
    return true;
  }
  bool cancelled = false;
};

class PqxxConnection final : public Connection {
 public:
  PqxxConnection(pqxx::connection_base& conn, std::unique_ptr<pqxx::connection> owned,
                 std::string where, std::string secret)
      : owned_(std::move(owned)),
        conn_(conn),
        sync_watch_(conn),
        where_(std::move(where)),
        secret_(std::move(secret)) {}

  ~PqxxConnection() override {
    // Disconnecting first lets the receivers go without each sending its own UNLISTEN. On a
    // wrapped connection they send it (libpqxx does not reconnect a broken pqxx::connection
    // for that; the failure is swallowed).
    if (owned_) owned_->disconnect();
    receivers_.clear();
  }

  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }

  Result execute(std::string_view sql, std::span<const Value> params) override {
    std::optional<std::string> channel = listen_channel(sql);
    bool other_listen = !channel && mentions_listen(sql);
    Result result = to_result(run(sql, params));
    if (channel) {
      add_receiver(*channel);
    } else if (other_listen) {
      pqxx::result channels = run("SELECT pg_listening_channels()", {});
      for (const pqxx::row& row : channels) add_receiver(row[0].c_str());
    }
    return result;
  }

  void begin() override {
    if (broken()) throw pqxx_driver::lost_error(where_);
    if (in_transaction_) {
      throw pqxx_driver::misuse_error(where_, "begin() called while a transaction is open");
    }
    run("BEGIN", {});
    in_transaction_ = true;
  }

  void commit() override {
    if (broken()) throw pqxx_driver::lost_error(where_);
    if (!in_transaction_) {
      throw pqxx_driver::misuse_error(where_, "commit() called without an open transaction");
    }
    // PostgreSQL would answer COMMIT of a failed transaction with a silent ROLLBACK.
    bool failed = failed_;
    in_transaction_ = false;  // COMMIT and ROLLBACK end the transaction even when they fail
    run(failed ? "ROLLBACK" : "COMMIT", {});
    if (failed) {
      throw pqxx_driver::misuse_error(
          where_, "commit() after a statement in the transaction failed: rolled back instead");
    }
  }

  void rollback() noexcept override {
    if (!in_transaction_) return;
    in_transaction_ = false;
    if (broken()) return;
    try {
      run("ROLLBACK", {});
    } catch (...) {
      // The session is in an unknown state; make sure no pool hands it out again.
      broken_ = true;
    }
  }

  bool in_transaction() const noexcept override { return in_transaction_; }

  bool broken() const noexcept override { return broken_ || !conn_.is_open(); }
  int native_socket() const noexcept override {
    try {
      return conn_.is_open() ? conn_.sock() : -1;
    } catch (...) {
      return -1;
    }
  }

  bool supports_notifications() const noexcept override { return true; }

  // Notifications already queued (by libpq, during earlier statements) come back at once;
  // otherwise waits on the socket. Notifications received before the connection broke are
  // returned first; the next call then reports the loss.
  std::vector<Notification> wait_for_notifications(std::chrono::milliseconds timeout) override {
    using Clock = std::chrono::steady_clock;
    if (pending_.empty() && broken()) lose(pqxx_driver::lost_error(where_));
    const Clock::time_point deadline = Clock::now() + std::max(timeout, timeout.zero());
    try {
      for (;;) {
        // Reads whatever the socket holds and hands every queued notification to the
        // receivers. Never reconnects: it does nothing on a closed connection.
        if (conn_.is_open()) conn_.get_notifs();
        if (!pending_.empty() || !conn_.is_open()) break;
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
      if (pending_.empty()) {
        lose(pqxx_driver::wait_error(e.what(), conn_.is_open(), where_, secret_));
      }
    }
    if (pending_.empty() && !conn_.is_open()) {
      lose(pqxx_driver::wait_error({}, false, where_, secret_));
    }
    return std::exchange(pending_, {});
  }

  std::string describe() const override { return where_ + " (libpqxx)"; }

 private:
  // Throws `err`, first marking the connection broken when `err` says it was lost.
  [[noreturn]] void lose(Error err) {
    if (err.code() == ErrorCode::kConnectionLost) {
      broken_ = true;
      in_transaction_ = false;
    }
    throw err;
  }

  // Registers a receiver for `channel` unless there is one (see the file comment).
  void add_receiver(const std::string& channel) {
    if (receivers_.contains(channel)) return;
    try {
      receivers_.emplace(channel, std::make_unique<ChannelReceiver>(conn_, channel, pending_));
    } catch (const std::exception& e) {
      failed_ = in_transaction_;
      lose(pqxx_driver::statement_error(e, conn_.is_open(), where_, secret_));
    }
    // libpqxx swallows a broken connection while it sends LISTEN.
    if (!conn_.is_open()) lose(pqxx_driver::lost_error(where_));
  }

  pqxx::result run(std::string_view sql, std::span<const Value> params) {
    if (broken()) {
      broken_ = true;
      in_transaction_ = false;
      throw pqxx_driver::lost_error(where_);
    }
    std::vector<std::optional<std::string>> texts;
    texts.reserve(params.size());
    for (const Value& v : params) texts.push_back(v.to_text());
    try {
      // Not committed: a nontransaction's commit and abort send nothing, so letting it end in
      // its destructor is the same and cannot fail after the statement succeeded.
      sync_watch_.cancelled = false;
      pqxx::nontransaction tx(conn_);
      pqxx::result r = texts.empty() ? tx.exec(std::string(sql))
                                     : tx.exec_params(std::string(sql),
                                                      pqxx::prepare::make_dynamic_params(texts));
      failed_ = false;  // in a failed transaction only ROLLBACK [TO SAVEPOINT] succeeds
      if (sync_watch_.cancelled) throw detail::sync_replication_cancelled_error(where_);
      return r;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      bool open = conn_.is_open();
      Error err = pqxx_driver::statement_error(e, open, where_, secret_);
      if (err.code() == ErrorCode::kConnectionLost) {
        broken_ = true;
        in_transaction_ = false;
      }
      failed_ = in_transaction_;
      throw err;
    }
  }

  std::unique_ptr<pqxx::connection> owned_;  // null for a wrapped connection
  pqxx::connection_base& conn_;
  SyncReplicationWatch sync_watch_;  // unregisters before owned_ goes
  std::string where_;
  std::string secret_;
  bool in_transaction_ = false;
  bool failed_ = false;  // a statement failed inside the open transaction
  bool broken_ = false;
  // Notifications handed over by the receivers, not yet returned. Declared before receivers_,
  // which point into it.
  std::vector<Notification> pending_;
  std::map<std::string, std::unique_ptr<ChannelReceiver>> receivers_;  // by channel
};

}  // namespace

std::unique_ptr<Connection> wrap_pqxx(pqxx::connection_base& conn) {
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
  std::string where = location(url.host, port, url.database);
  if (url.dialect != Dialect::kPostgreSQL) {
    throw pqxx_driver::invalid_url_error(where, "the libpqxx driver needs a postgresql:// URL");
  }
  std::string conninfo;
  if (!url.host.empty()) detail::append_quoted_option(conninfo, "host", url.host);
  detail::append_quoted_option(conninfo, "port", port);
  if (!url.user.empty()) detail::append_quoted_option(conninfo, "user", url.user);
  if (!url.password.empty()) detail::append_quoted_option(conninfo, "password", url.password);
  if (!url.database.empty()) detail::append_quoted_option(conninfo, "dbname", url.database);
  if (!url.param("connect_timeout"))
    detail::append_quoted_option(conninfo, "connect_timeout", "10");
  detail::append_quoted_option(conninfo, "fallback_application_name", "dblock");
  for (const auto& [key, value] : url.params) {
    if (!detail::is_option_keyword(key)) {
      throw pqxx_driver::invalid_url_error(
          where, "URL parameter \"" + key + "\" is not a libpq connection keyword");
    }
    detail::append_quoted_option(conninfo, key, value);
  }

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
  return std::make_unique<PqxxConnection>(ref, std::move(conn), std::move(where), url.password);
}

}  // namespace dblock
