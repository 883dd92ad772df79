// SPDX-License-Identifier: Apache-2.0
#include "caller_tables.hpp"

#include <string>

namespace dblock::detail {

void rethrow_for_caller_table(const Error& e, std::string_view table, std::string_view used_for) {
  if (e.code() != ErrorCode::kUndefinedTable) throw;
  throw Error(ErrorCode::kUndefinedTable,
              "table " + std::string(table) +
                  " (or its schema) does not exist: " + std::string(used_for) +
                  " works on a table of your own; create it first or check the name");
}

}  // namespace dblock::detail
