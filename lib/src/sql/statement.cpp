// SPDX-License-Identifier: Apache-2.0
#include "sql/statement.hpp"

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

Statement::Statement(std::string_view templ, Dialect dialect, const TableNames& names,
                     bool relaxed_durability, bool fair) {
  sql_ = render_sql(templ, dialect, names, relaxed_durability, &parameters_, fair);
}

std::vector<Value> Statement::bind(std::span<const Arg> args) const {
  std::vector<Value> values;
  values.reserve(parameters_.size());
  for (const auto& name : parameters_) {
    const Arg* found = nullptr;
    for (const auto& a : args) {
      if (a.name == name) {
        found = &a;
        break;
      }
    }
    if (found == nullptr) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "no value bound for parameter '" + name + "' of: " + sql_);
    }
    values.push_back(found->value);
  }
  return values;
}

}  // namespace dblock::detail
