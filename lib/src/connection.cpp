// SPDX-License-Identifier: Apache-2.0
#include "dblock/connection.hpp"

#include <charconv>
#include <cstdio>

#include "dblock/error.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

std::optional<std::string> Value::to_text() const {
  struct Visitor {
    std::optional<std::string> operator()(std::monostate) const { return std::nullopt; }
    std::optional<std::string> operator()(std::int64_t v) const { return std::to_string(v); }
    std::optional<std::string> operator()(double v) const {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact form
      return std::string(buf, end);
    }
    std::optional<std::string> operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{}, v_);
}

void Connection::listen(std::string_view channel) {
  if (!supports_notifications()) {
    throw Error(ErrorCode::kFailedPrecondition,
                describe() + ": this driver cannot listen for notifications");
  }
  execute("LISTEN " + quote_identifier(Dialect::kPostgreSQL, channel));
}

std::vector<Notification> Connection::wait_for_notifications(std::chrono::milliseconds) {
  throw Error(ErrorCode::kFailedPrecondition,
              describe() + ": this driver cannot wait for notifications");
}

std::size_t Result::column(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return i;
  }
  throw Error(ErrorCode::kFailedPrecondition,
              "result has no column named '" + std::string(name) + "'");
}

const std::optional<std::string>& Result::at(std::size_t row, std::size_t col) const {
  if (row >= rows_.size() || col >= columns_.size() || col >= rows_[row].size()) {
    throw Error(ErrorCode::kFailedPrecondition, "result cell (" + std::to_string(row) + ", " +
                                                    std::to_string(col) + ") is out of range");
  }
  return rows_[row][col];
}

std::int64_t Result::int64_at(std::size_t row, std::size_t col) const {
  const auto& cell = at(row, col);
  if (!cell) {
    throw Error(ErrorCode::kFailedPrecondition,
                "column '" + columns_[col] + "' is NULL, expected an integer");
  }
  std::int64_t v = 0;
  const char* first = cell->data();
  const char* last = first + cell->size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last) {
    throw Error(ErrorCode::kFailedPrecondition,
                "column '" + columns_[col] + "' holds '" + *cell + "', expected an integer");
  }
  return v;
}

}  // namespace dblock
