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
// Thread-safety: one thread at a time (see dblock/connection.hpp).
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/prepared_statement>
#include <pqxx/result>
#include <string>
#include <utility>
#include <vector>

#include "dblock/libpqxx.hpp"
#include "drivers/libpqxx/errors.hpp"

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

class PqxxConnection final : public Connection {
 public:
  PqxxConnection(pqxx::connection_base& conn, std::unique_ptr<pqxx::connection> owned,
                 std::string where, std::string secret)
      : owned_(std::move(owned)),
        conn_(conn),
        where_(std::move(where)),
        secret_(std::move(secret)) {}

  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }

  Result execute(std::string_view sql, std::span<const Value> params) override {
    return to_result(run(sql, params));
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

  std::string describe() const override { return where_ + " (libpqxx)"; }

 private:
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
      pqxx::nontransaction tx(conn_);
      pqxx::result r = texts.empty() ? tx.exec(std::string(sql))
                                     : tx.exec_params(std::string(sql),
                                                      pqxx::prepare::make_dynamic_params(texts));
      failed_ = false;  // in a failed transaction only ROLLBACK [TO SAVEPOINT] succeeds
      return r;
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
  std::string where_;
  std::string secret_;
  bool in_transaction_ = false;
  bool failed_ = false;  // a statement failed inside the open transaction
  bool broken_ = false;
};

// Appends `key='value'` to a libpq connection string, escaping ' and \ in the value.
void append_option(std::string& conninfo, std::string_view key, std::string_view value) {
  conninfo.append(key).append("='");
  for (char c : value) {
    if (c == '\'' || c == '\\') conninfo += '\\';
    conninfo += c;
  }
  conninfo.append("' ");
}

bool is_keyword(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

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
  if (!url.host.empty()) append_option(conninfo, "host", url.host);
  append_option(conninfo, "port", port);
  if (!url.user.empty()) append_option(conninfo, "user", url.user);
  if (!url.password.empty()) append_option(conninfo, "password", url.password);
  if (!url.database.empty()) append_option(conninfo, "dbname", url.database);
  if (!url.param("connect_timeout")) append_option(conninfo, "connect_timeout", "10");
  append_option(conninfo, "fallback_application_name", "dblock");
  for (const auto& [key, value] : url.params) {
    if (!is_keyword(key)) {
      throw pqxx_driver::invalid_url_error(
          where, "URL parameter \"" + key + "\" is not a libpq connection keyword");
    }
    append_option(conninfo, key, value);
  }

  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(conninfo);
    where = location_of(*conn);
  } catch (const std::exception& e) {
    throw pqxx_driver::connect_error(e, where, url.password);
  }
  pqxx::connection& ref = *conn;
  return std::make_unique<PqxxConnection>(ref, std::move(conn), std::move(where), url.password);
}

}  // namespace dblock
