// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

const ServerSql& postgresql_sql();
const ServerSql& mysql_sql();
const ServerSql& mariadb_sql();

const ServerSql& server_sql(Server server) {
  switch (server) {
    case Server::kPostgreSQL:
      return postgresql_sql();
    case Server::kMySQL:
      break;
    case Server::kMariaDB:
      return mariadb_sql();
  }
  return mysql_sql();
}

std::string last_column(const Result& r) {
  if (r.empty() || r.columns().empty()) return "";
  return r.at(0, r.columns().size() - 1).value_or("");
}

std::string replace_all(std::string text, std::string_view marker, std::string_view value) {
  for (std::size_t pos = text.find(marker); pos != std::string::npos;
       pos = text.find(marker, pos + value.size())) {
    text.replace(pos, marker.size(), value);
  }
  return text;
}

std::string render_sql(std::string_view templ, Dialect dialect, const TableNames& names,
                       bool relaxed_durability, std::vector<std::string>* parameters, bool fair) {
  std::string out;
  out.reserve(templ.size() + 64);
  std::size_t pos = 0;
  bool in_fair = false;  // inside {{fair}} ... {{/fair}}
  for (;;) {
    std::size_t open = templ.find("{{", pos);
    const bool shown = !in_fair || fair;
    if (shown) out.append(templ.substr(pos, open == std::string_view::npos ? open : open - pos));
    if (open == std::string_view::npos) break;
    std::size_t close = templ.find("}}", open + 2);
    if (close == std::string_view::npos) {
      throw Error(ErrorCode::kInvalidArgument, "unterminated '{{' in an SQL template");
    }
    std::string_view token = templ.substr(open + 2, close - open - 2);
    if (token == "fair" || token == "/fair") {
      if (in_fair == (token == "fair")) {
        throw Error(ErrorCode::kInvalidArgument, "unbalanced '{{fair}}' in an SQL template");
      }
      in_fair = token == "fair";
    } else if (!shown) {
      // Left out: a fair lock's text, rendered for another.
    } else if (token.starts_with("table:")) {
      out += names.qualified(dialect, token.substr(6));
    } else if (token.starts_with("name:")) {
      out += quote_identifier(dialect, names.name(token.substr(5)));
    } else if (token.starts_with("relaxed:")) {
      if (relaxed_durability) out += token.substr(8);
    } else if (token.starts_with("param:") && parameters != nullptr) {
      const std::string name(token.substr(6));
      if (dialect == Dialect::kPostgreSQL) {
        // One number per name: a parameter used twice is bound once.
        auto it = std::find(parameters->begin(), parameters->end(), name);
        if (it == parameters->end()) it = parameters->insert(parameters->end(), name);
        out += '$' + std::to_string(it - parameters->begin() + 1);
      } else {
        parameters->push_back(name);  // MySQL binds each ? in turn
        out += '?';
      }
    } else if (token == "schema" && !names.schema().empty()) {
      out += quote_identifier(dialect, names.schema());
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  "unknown placeholder '{{" + std::string(token) + "}}' in an SQL template");
    }
    pos = close + 2;
  }
  if (in_fair)
    throw Error(ErrorCode::kInvalidArgument, "unterminated '{{fair}}' in an SQL template");
  return out;
}

}  // namespace dblock::detail
