// SPDX-License-Identifier: Apache-2.0
// The libpq baseline client.
#include <libpq-fe.h>
#include <poll.h>

#include <charconv>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "raw_client.hpp"

namespace dblock::bench {

namespace {

// libpq's conninfo value quoting: single quotes, backslash-escaped.
std::string quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

class RawPostgreSQL final : public RawClient {
 public:
  explicit RawPostgreSQL(const DatabaseUrl& url) {
    std::string conninfo = "host=" + quoted(url.host.empty() ? "127.0.0.1" : url.host) +
                           " port=" + std::to_string(url.effective_port()) +
                           " user=" + quoted(url.user) + " dbname=" + quoted(url.database) +
                           " password=" + quoted(url.password) +
                           " fallback_application_name=" + quoted("dblock-bench-raw");
    conn_ = PQconnectdb(conninfo.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string message = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("raw libpq client cannot connect to " + url.redacted() + ": " +
                               scrub(message, url.password));
    }
  }
  ~RawPostgreSQL() override { PQfinish(conn_); }

  RawResult execute(const std::string& sql, std::span<const Value> params) override {
    Owned guard = run(sql, params);
    PGresult* res = guard.get();
    RawResult out;
    const char* affected = PQcmdTuples(res);
    std::from_chars(affected, affected + std::char_traits<char>::length(affected), out.affected);
    if (PQntuples(res) > 0) {
      out.has_row = true;
      if (PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)) {
        const char* v = PQgetvalue(res, 0, 0);
        std::from_chars(v, v + PQgetlength(res, 0, 0), out.first);
      }
    }
    return out;
  }

  RawRows query(const std::string& sql, std::span<const Value> params) override {
    Owned guard = run(sql, params);
    PGresult* res = guard.get();
    RawRows rows(static_cast<std::size_t>(PQntuples(res)));
    const int columns = PQnfields(res);
    for (int r = 0; r < PQntuples(res); ++r) {
      auto& row = rows[static_cast<std::size_t>(r)];
      row.reserve(static_cast<std::size_t>(columns));
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(res, r, c)) {
          row.emplace_back();
        } else {
          row.emplace_back(
              std::string(PQgetvalue(res, r, c), static_cast<std::size_t>(PQgetlength(res, r, c))));
        }
      }
    }
    return rows;
  }

  void listen(const std::string& channel) override {
    char* quoted_channel = PQescapeIdentifier(conn_, channel.c_str(), channel.size());
    if (quoted_channel == nullptr) throw std::runtime_error("raw libpq: cannot quote " + channel);
    const std::string sql = std::string("LISTEN ") + quoted_channel;
    PQfreemem(quoted_channel);
    run(sql, {});
  }

  bool notified(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (PQconsumeInput(conn_) == 0) {
        throw std::runtime_error(std::string("raw libpq: ") + PQerrorMessage(conn_));
      }
      bool any = false;
      while (PGnotify* n = PQnotifies(conn_)) {
        any = true;
        PQfreemem(n);
      }
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (any || left.count() <= 0) return any;
      pollfd p{PQsocket(conn_), POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left.count()));
    }
  }

  std::string server_version() override {
    PGresult* res = PQexec(conn_, "SELECT version()");
    std::string v = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";
    PQclear(res);
    return v;
  }

 private:
  using Owned = std::unique_ptr<PGresult, void (*)(PGresult*)>;

  // Sends one statement (text parameters, as dblock's libpqxx driver does); throws when it failed.
  Owned run(const std::string& sql, std::span<const Value> params) {
    texts_.clear();
    for (const Value& v : params) texts_.push_back(v.to_text());
    values_.clear();
    for (const auto& t : texts_) values_.push_back(t ? t->c_str() : nullptr);
    PGresult* res = params.empty()
                        ? PQexec(conn_, sql.c_str())
                        : PQexecParams(conn_, sql.c_str(), static_cast<int>(values_.size()),
                                       nullptr, values_.data(), nullptr, nullptr, 0);
    Owned guard(res, PQclear);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      throw std::runtime_error(std::string("raw libpq statement failed: ") +
                               PQresultErrorMessage(res));
    }
    return guard;
  }

  PGconn* conn_ = nullptr;
  std::vector<std::optional<std::string>> texts_;
  std::vector<const char*> values_;
};

}  // namespace

void RawClient::listen(const std::string&) {
  throw std::runtime_error("this raw client has no notifications");
}

bool RawClient::notified(std::chrono::milliseconds) {
  throw std::runtime_error("this raw client has no notifications");
}

std::unique_ptr<RawClient> connect_raw_postgresql(const DatabaseUrl& url) {
  return std::make_unique<RawPostgreSQL>(url);
}

std::string libpq_version() {
  int v = PQlibVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000);
}

std::unique_ptr<RawClient> connect_raw(const DatabaseUrl& url) {
  return url.dialect == Dialect::kPostgreSQL ? connect_raw_postgresql(url) : connect_raw_mysql(url);
}

}  // namespace dblock::bench
