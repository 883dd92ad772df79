// SPDX-License-Identifier: Apache-2.0
// Native libpq work for the SOCI driver's PostgreSQL sessions (see postgresql_native.hpp).
//
// Thread-safety: as in the header.
#include "drivers/soci/postgresql_native.hpp"

#include <charconv>
#include <cstdint>
#include <string_view>

#include "drivers/libpq/result.hpp"

namespace dblock::soci_driver {
namespace {

const PGresult* result_of(soci::statement& st) {
  auto* backend = static_cast<soci::postgresql_statement_backend*>(st.get_backend());
  return backend == nullptr ? nullptr : backend->result_.get_result();
}

}  // namespace

Result postgresql_result(soci::statement& st) {
  const PGresult* result = result_of(st);
  if (result == nullptr) return Result({}, {}, 0);
  // PQcmdTuples: the count in the command tag ("INSERT 0 3", "SELECT 1"), empty when none.
  std::uint64_t affected = 0;
  const std::string_view tag = PQcmdTuples(const_cast<PGresult*>(result));
  std::from_chars(tag.data(), tag.data() + tag.size(), affected);
  return libpq_driver::to_result(result, affected);
}

bool answered_copy(soci::statement& st) {
  const PGresult* result = result_of(st);
  if (result == nullptr) return false;
  const ExecStatusType status = PQresultStatus(result);
  return status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH;
}

}  // namespace dblock::soci_driver
