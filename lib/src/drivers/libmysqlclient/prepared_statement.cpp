// SPDX-License-Identifier: Apache-2.0
// Binding parameters and fetching text results through the prepared-statement API. Works with
// MariaDB Connector/C (my_bool flags) and Oracle's libmysqlclient (bool flags).
#include "drivers/libmysqlclient/prepared_statement.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dblock::mysql_driver {
namespace {

// my_bool (char) in Connector/C, bool in Oracle's library.
using BindFlag = std::remove_pointer_t<decltype(MYSQL_BIND::is_null)>;

// First buffer per column: the column's display width, within these bounds. A longer value is
// fetched again at full size, and the buffer grows (up to kMaxBuffer) for the rows after it.
constexpr unsigned long kMinBuffer = 64;  // any number or date as text
constexpr unsigned long kFirstBuffer = 4096;
constexpr unsigned long kMaxBuffer = 1 << 20;

// Frees the statement's result set however run_statement() ends, so the connection can run the
// next statement.
class FreeResultOnExit {
 public:
  explicit FreeResultOnExit(MYSQL_STMT* stmt) : stmt_(stmt) {}
  ~FreeResultOnExit() { mysql_stmt_free_result(stmt_); }
  FreeResultOnExit(const FreeResultOnExit&) = delete;
  FreeResultOnExit& operator=(const FreeResultOnExit&) = delete;

 private:
  MYSQL_STMT* stmt_;
};

void bind_param(MYSQL_BIND& bind, unsigned long& length, const Value& value) {
  const Value::Storage& v = value.storage();
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    bind.buffer_type = MYSQL_TYPE_LONGLONG;
    bind.buffer = const_cast<std::int64_t*>(i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    bind.buffer_type = MYSQL_TYPE_DOUBLE;
    bind.buffer = const_cast<double*>(d);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    bind.buffer_type = MYSQL_TYPE_STRING;
    bind.buffer = const_cast<char*>(s->data());
    bind.buffer_length = static_cast<unsigned long>(s->size());
    length = bind.buffer_length;
    bind.length = &length;
  } else {
    bind.buffer_type = MYSQL_TYPE_NULL;
  }
}

// One result column's fetch buffer and indicators.
struct Column {
  std::vector<char> buffer;
  unsigned long length = 0;
  BindFlag is_null = 0;
  BindFlag error = 0;
};

void bind_column(MYSQL_BIND& bind, Column& column) {
  bind = MYSQL_BIND{};
  bind.buffer_type = MYSQL_TYPE_STRING;
  bind.buffer = column.buffer.data();
  bind.buffer_length = static_cast<unsigned long>(column.buffer.size());
  bind.length = &column.length;
  bind.is_null = &column.is_null;
  bind.error = &column.error;
}

// The whole value of a column whose value was longer than its buffer; nullopt on failure.
std::optional<std::string> fetch_whole(MYSQL_STMT* stmt, unsigned int index, unsigned long length) {
  std::vector<char> buffer(static_cast<std::size_t>(length) + 1);
  unsigned long got = 0;
  BindFlag is_null = 0;
  MYSQL_BIND bind{};
  bind.buffer_type = MYSQL_TYPE_STRING;
  bind.buffer = buffer.data();
  bind.buffer_length = static_cast<unsigned long>(buffer.size());
  bind.length = &got;
  bind.is_null = &is_null;
  if (mysql_stmt_fetch_column(stmt, &bind, index, 0) != 0) return std::nullopt;
  return std::string(buffer.data(), std::min(got, length));
}

// Reads every row of the current result set. False on failure (error left on `stmt`).
bool fetch_rows(MYSQL_STMT* stmt, unsigned int count, std::vector<std::string>& names,
                std::vector<Result::Row>& rows) {
  MYSQL_RES* meta = mysql_stmt_result_metadata(stmt);
  if (meta == nullptr) return false;
  std::vector<Column> columns(count);
  std::vector<MYSQL_BIND> binds(count);
  MYSQL_FIELD* fields = mysql_fetch_fields(meta);
  names.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    names.emplace_back(fields[i].name, fields[i].name_length);
    unsigned long width = std::clamp<unsigned long>(fields[i].length + 1, kMinBuffer, kFirstBuffer);
    columns[i].buffer.resize(width);
    bind_column(binds[i], columns[i]);
  }
  mysql_free_result(meta);
  if (mysql_stmt_bind_result(stmt, binds.data()) != 0) return false;

  for (;;) {
    int rc = mysql_stmt_fetch(stmt);
    if (rc == MYSQL_NO_DATA) return true;
    if (rc != 0 && rc != MYSQL_DATA_TRUNCATED) return false;
    Result::Row& row = rows.emplace_back();
    row.reserve(count);
    bool rebind = false;
    for (unsigned int i = 0; i < count; ++i) {
      Column& c = columns[i];
      if (c.is_null) {
        row.emplace_back();
      } else if (c.length <= c.buffer.size()) {
        row.emplace_back(std::in_place, c.buffer.data(), c.length);
      } else {
        std::optional<std::string> whole = fetch_whole(stmt, i, c.length);
        if (!whole) return false;
        row.push_back(std::move(whole));
        if (c.buffer.size() < kMaxBuffer) {
          c.buffer.resize(std::min<unsigned long>(c.length + 1, kMaxBuffer));
          rebind = true;
        }
      }
    }
    if (rebind) {
      for (unsigned int i = 0; i < count; ++i) bind_column(binds[i], columns[i]);
      if (mysql_stmt_bind_result(stmt, binds.data()) != 0) return false;
    }
  }
}

}  // namespace

std::optional<Result> run_statement(MYSQL_STMT* stmt, std::span<const Value> params) {
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<unsigned long> lengths(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) bind_param(binds[i], lengths[i], params[i]);
  if (!binds.empty() && mysql_stmt_bind_param(stmt, binds.data()) != 0) return std::nullopt;
  if (mysql_stmt_execute(stmt) != 0) return std::nullopt;

  FreeResultOnExit free_result(stmt);
  std::vector<std::string> names;
  std::vector<Result::Row> rows;
  std::uint64_t affected = 0;
  std::uint64_t insert_id = 0;
  unsigned int count = mysql_stmt_field_count(stmt);
  if (count == 0) {
    affected = mysql_stmt_affected_rows(stmt);
    insert_id = mysql_stmt_insert_id(stmt);
  } else {
    if (!fetch_rows(stmt, count, names, rows)) return std::nullopt;
    affected = rows.size();
  }
  // Further result sets (a CALL) are dropped so the connection stays in sync. Returns -1 at once
  // when there are none (mysql_stmt_more_results() is Connector/C only).
  for (;;) {
    mysql_stmt_free_result(stmt);
    int rc = mysql_stmt_next_result(stmt);
    if (rc < 0) break;
    if (rc > 0) return std::nullopt;
  }
  return Result(std::move(names), std::move(rows), affected, insert_id);
}

}  // namespace dblock::mysql_driver
