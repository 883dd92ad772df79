// SPDX-License-Identifier: Apache-2.0
#include "dblock/table_names.hpp"

#include "dblock/error.hpp"
#include "escaped_text.hpp"

namespace dblock {

namespace {
constexpr std::size_t kMaxIdentifier = 63;  // PostgreSQL's limit; MySQL allows 64

bool valid_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdentifier) return false;
  if (s.front() >= '0' && s.front() <= '9') return false;
  for (char c : s) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Shows a rejected name safely: printable ASCII kept, the rest as \xNN, long names cut.
std::string printable(std::string_view s) {
  return detail::escaped_text(s.substr(0, 80), detail::Bytes::kAsciiOnly) +
         (s.size() > 80 ? "..." : "");
}
}  // namespace

void validate_identifier(std::string_view name, std::string_view what) {
  if (!valid_identifier(name)) {
    throw Error(ErrorCode::kInvalidArgument,
                "invalid " + std::string(what) + " '" + printable(name) +
                    "': use 1 to 63 ASCII letters, digits or '_', not starting with a digit");
  }
}

std::string quote_identifier(Dialect dialect, std::string_view name) {
  validate_identifier(name, "identifier");
  char q = dialect == Dialect::kPostgreSQL ? '"' : '`';
  return q + std::string(name) + q;
}

std::string quote_table_name(Dialect dialect, std::string_view table) {
  const auto dot = table.find('.');
  if (dot == std::string_view::npos) return quote_identifier(dialect, table);
  return quote_identifier(dialect, table.substr(0, dot)) + "." +
         quote_identifier(dialect, table.substr(dot + 1));
}

TableNames::TableNames(std::string prefix, std::string schema)
    : prefix_(std::move(prefix)), schema_(std::move(schema)) {
  if (!prefix_.empty()) validate_identifier(prefix_, "table prefix");
  if (!schema_.empty()) validate_identifier(schema_, "schema name");
}

std::string TableNames::name(std::string_view base) const {
  std::string full = prefix_ + std::string(base);
  validate_identifier(full, "table name");
  return full;
}

std::string TableNames::qualified(Dialect dialect, std::string_view base) const {
  std::string table = quote_identifier(dialect, name(base));
  return schema_.empty() ? table : quote_identifier(dialect, schema_) + "." + table;
}

}  // namespace dblock
