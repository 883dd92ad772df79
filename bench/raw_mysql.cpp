// SPDX-License-Identifier: Apache-2.0
// The libmysqlclient baseline client.
#include <mysql.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include "raw_client.hpp"

namespace dblock::bench {

namespace {

class RawMySQL final : public RawClient {
 public:
  explicit RawMySQL(const DatabaseUrl& url) {
    static std::once_flag once;
    std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
    conn_ = mysql_init(nullptr);
    mysql_options(conn_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    std::string host = url.host.empty() ? "127.0.0.1" : url.host;
    // CLIENT_FOUND_ROWS, as dblock's driver: affected rows count matched rows.
    if (mysql_real_connect(conn_, host.c_str(), url.user.c_str(), url.password.c_str(),
                           url.database.c_str(), url.effective_port(), nullptr,
                           CLIENT_FOUND_ROWS) == nullptr) {
      std::string message = mysql_error(conn_);
      mysql_close(conn_);
      throw std::runtime_error("raw libmysqlclient cannot connect to " + url.redacted() + ": " +
                               scrub(message, url.password));
    }
  }
  ~RawMySQL() override {
    for (auto& [sql, stmt] : statements_) mysql_stmt_close(stmt);
    mysql_close(conn_);
  }

  RawResult execute(const std::string& sql, std::span<const Value> params) override {
    if (params.empty()) return run_text(sql);
    MYSQL_STMT* stmt = run_prepared(sql, params);
    RawResult out;
    if (mysql_stmt_field_count(stmt) == 0) {
      out.affected = mysql_stmt_affected_rows(stmt);
      out.insert_id = mysql_stmt_insert_id(stmt);
      return out;
    }
    long long first = 0;
    std::remove_pointer_t<decltype(MYSQL_BIND::is_null)> is_null = 0;
    MYSQL_BIND result{};
    result.buffer_type = MYSQL_TYPE_LONGLONG;
    result.buffer = &first;
    result.is_null = &is_null;
    mysql_stmt_bind_result(stmt, &result);
    int rc = mysql_stmt_fetch(stmt);
    if (rc == 0 || rc == MYSQL_DATA_TRUNCATED) {
      out.has_row = true;
      out.first = is_null ? 0 : first;
    }
    mysql_stmt_free_result(stmt);
    return out;
  }

  RawRows query(const std::string& sql, std::span<const Value> params) override {
    RawRows rows;
    if (params.empty()) {
      if (mysql_real_query(conn_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
        throw std::runtime_error(std::string("raw libmysqlclient statement failed: ") +
                                 mysql_error(conn_));
      }
      if (MYSQL_RES* res = mysql_store_result(conn_)) {
        const unsigned columns = mysql_num_fields(res);
        while (MYSQL_ROW row = mysql_fetch_row(res)) {
          const unsigned long* lengths = mysql_fetch_lengths(res);
          auto& out = rows.emplace_back();
          for (unsigned c = 0; c < columns; ++c) {
            if (row[c] == nullptr) {
              out.emplace_back();
            } else {
              out.emplace_back(std::string(row[c], lengths[c]));
            }
          }
        }
        mysql_free_result(res);
      }
      return rows;
    }
    MYSQL_STMT* stmt = run_prepared(sql, params);
    const unsigned columns = mysql_stmt_field_count(stmt);
    if (columns == 0) return rows;
    // Every column into a text buffer; a longer value is fetched again whole.
    constexpr unsigned long kBuffer = 64;
    results_.assign(columns, MYSQL_BIND{});
    buffers_.resize(columns);
    result_lengths_.assign(columns, 0);
    nulls_.assign(columns, 0);
    for (unsigned c = 0; c < columns; ++c) {
      buffers_[c].resize(kBuffer);
      MYSQL_BIND& b = results_[c];
      b.buffer_type = MYSQL_TYPE_STRING;
      b.buffer = buffers_[c].data();
      b.buffer_length = kBuffer;
      b.length = &result_lengths_[c];
      b.is_null = &nulls_[c];
    }
    mysql_stmt_bind_result(stmt, results_.data());
    while (true) {
      const int rc = mysql_stmt_fetch(stmt);
      if (rc == MYSQL_NO_DATA) break;
      if (rc == 1) {
        std::string message = mysql_stmt_error(stmt);
        mysql_stmt_free_result(stmt);
        throw std::runtime_error("raw libmysqlclient fetch failed: " + message);
      }
      auto& out = rows.emplace_back();
      for (unsigned c = 0; c < columns; ++c) {
        if (nulls_[c]) {
          out.emplace_back();
          continue;
        }
        if (result_lengths_[c] <= kBuffer) {
          out.emplace_back(std::string(buffers_[c].data(), result_lengths_[c]));
          continue;
        }
        std::string whole_value(result_lengths_[c], '\0');
        MYSQL_BIND whole{};
        whole.buffer_type = MYSQL_TYPE_STRING;
        whole.buffer = whole_value.data();
        whole.buffer_length = result_lengths_[c];
        mysql_stmt_fetch_column(stmt, &whole, c, 0);
        out.emplace_back(std::move(whole_value));
      }
    }
    mysql_stmt_free_result(stmt);
    return rows;
  }

  std::string server_version() override { return mysql_get_server_info(conn_); }

 private:
  // Prepares `sql` once per connection, binds `params` and executes it; throws when it failed.
  MYSQL_STMT* run_prepared(const std::string& sql, std::span<const Value> params) {
    MYSQL_STMT*& stmt = statements_[sql];
    if (stmt == nullptr) {
      stmt = mysql_stmt_init(conn_);
      if (mysql_stmt_prepare(stmt, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
        std::string message = mysql_stmt_error(stmt);
        mysql_stmt_close(stmt);
        statements_.erase(sql);
        throw std::runtime_error("raw libmysqlclient prepare failed: " + message);
      }
    }
    binds_.assign(params.size(), MYSQL_BIND{});
    ints_.resize(params.size());
    lengths_.resize(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      MYSQL_BIND& b = binds_[i];
      const Value::Storage& v = params[i].storage();
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        ints_[i] = *n;
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &ints_[i];
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        lengths_[i] = static_cast<unsigned long>(s->size());
        b.buffer_type = MYSQL_TYPE_STRING;
        b.buffer = const_cast<char*>(s->data());
        b.buffer_length = lengths_[i];
        b.length = &lengths_[i];
      } else {
        b.buffer_type = MYSQL_TYPE_NULL;
      }
    }
    if (mysql_stmt_bind_param(stmt, binds_.data()) != 0 || mysql_stmt_execute(stmt) != 0) {
      throw std::runtime_error(std::string("raw libmysqlclient statement failed: ") +
                               mysql_stmt_error(stmt));
    }
    return stmt;
  }

  RawResult run_text(const std::string& sql) {
    if (mysql_real_query(conn_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
      throw std::runtime_error(std::string("raw libmysqlclient statement failed: ") +
                               mysql_error(conn_));
    }
    RawResult out;
    if (MYSQL_RES* res = mysql_store_result(conn_)) {
      if (MYSQL_ROW row = mysql_fetch_row(res); row != nullptr && row[0] != nullptr) {
        out.has_row = true;
        out.first = std::atoll(row[0]);
      }
      mysql_free_result(res);
    } else {
      out.affected = mysql_affected_rows(conn_);
      out.insert_id = mysql_insert_id(conn_);
    }
    return out;
  }

  MYSQL* conn_ = nullptr;
  std::map<std::string, MYSQL_STMT*> statements_;
  std::vector<MYSQL_BIND> binds_;
  std::vector<long long> ints_;
  std::vector<unsigned long> lengths_;
  // query()'s result columns.
  std::vector<MYSQL_BIND> results_;
  std::vector<std::vector<char>> buffers_;
  std::vector<unsigned long> result_lengths_;
  std::vector<std::remove_pointer_t<decltype(MYSQL_BIND::is_null)>> nulls_;
};

}  // namespace

std::unique_ptr<RawClient> connect_raw_mysql(const DatabaseUrl& url) {
  return std::make_unique<RawMySQL>(url);
}

std::string mysql_client_version() { return mysql_get_client_info(); }

}  // namespace dblock::bench
