// Native libpq work for the SOCI driver's PostgreSQL sessions (see postgresql_native.hpp).
//
// Thread-safety: as in the header.
#include "drivers/soci/postgresql_native.hpp"

#include "drivers/libpq/result.hpp"

namespace dblock::soci_driver {
namespace {

constexpr Oid kBoolOid = 16;  // pg_type.oid of boolean

const PGresult* result_of(soci::statement& st) {
  auto* backend = static_cast<soci::postgresql_statement_backend*>(st.get_backend());
  return backend == nullptr ? nullptr : backend->result_.get_result();
}

}  // namespace

std::vector<bool> boolean_columns(soci::statement& st, std::size_t count) {
  std::vector<bool> out(count, false);
  const PGresult* result = result_of(st);
  if (result == nullptr || static_cast<std::size_t>(PQnfields(result)) != count) return out;
  for (std::size_t c = 0; c < count; ++c) {
    out[c] = PQftype(result, static_cast<int>(c)) == kBoolOid;
  }
  return out;
}

std::optional<Result> undescribed_result(soci::statement& st, const soci::soci_error& e) {
  if (dynamic_cast<const soci::postgresql_soci_error*>(&e) != nullptr ||
      !e.get_error_message().starts_with("unknown data type")) {
    return std::nullopt;
  }
  const PGresult* result = result_of(st);
  if (result == nullptr || PQresultStatus(result) != PGRES_TUPLES_OK) return std::nullopt;
  return libpq_driver::to_result(result, static_cast<std::uint64_t>(PQntuples(result)));
}

bool answered_copy(soci::statement& st) {
  const PGresult* result = result_of(st);
  if (result == nullptr) return false;
  const ExecStatusType status = PQresultStatus(result);
  return status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH;
}

}  // namespace dblock::soci_driver
