// Native libpq work for the SOCI driver's PostgreSQL sessions (see postgresql_native.hpp).
//
// Notifications are not lost between statements and waits: libpq queues each notification it
// reads, during any statement too, until PQnotifies() takes it, and SOCI never calls
// PQnotifies(); wait_for_notifications() takes the queue first.
//
// Thread-safety: as in the header.
#include "drivers/soci/postgresql_native.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "drivers/driver_connection.hpp"

namespace dblock::soci_driver {
namespace {

constexpr Oid kBoolOid = 16;  // pg_type.oid of boolean

const PGresult* result_of(soci::statement& st) {
  auto* backend = static_cast<soci::postgresql_statement_backend*>(st.get_backend());
  return backend == nullptr ? nullptr : backend->result_.get_result();
}

// Moves the notifications libpq has queued on `pg` to `out`.
void take_notifications(PGconn* pg, std::vector<Notification>& out) {
  auto free_notify = [](PGnotify* n) { PQfreemem(n); };
  while (std::unique_ptr<PGnotify, decltype(free_notify)> n{PQnotifies(pg), free_notify}) {
    out.push_back(Notification{n->relname, n->extra == nullptr ? "" : n->extra});
  }
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
  const int width = PQnfields(result);
  const int height = PQntuples(result);
  std::vector<std::string> columns;
  for (int c = 0; c < width; ++c) columns.emplace_back(PQfname(result, c));
  std::vector<Result::Row> rows(static_cast<std::size_t>(height));
  for (int r = 0; r < height; ++r) {
    Result::Row& row = rows[static_cast<std::size_t>(r)];
    for (int c = 0; c < width; ++c) {
      if (PQgetisnull(result, r, c)) {
        row.emplace_back();
      } else {
        row.emplace_back(std::in_place, PQgetvalue(result, r, c),
                         static_cast<std::size_t>(PQgetlength(result, r, c)));
      }
    }
  }
  return Result(std::move(columns), std::move(rows), static_cast<std::uint64_t>(height));
}

std::vector<Notification> wait_for_notifications(PGconn* pg, bool broken,
                                                 std::chrono::milliseconds timeout,
                                                 std::string_view where, std::string_view secret) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::max(timeout, timeout.zero());
  std::vector<Notification> out;
  if (pg != nullptr) take_notifications(pg, out);
  if (!out.empty()) return out;
  if (pg == nullptr || broken) throw detail::lost_error(where);
  auto still_open = [&] { return PQstatus(pg) == CONNECTION_OK; };
  while (out.empty()) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= left.zero()) break;
    pollfd pfd{PQsocket(pg), POLLIN, 0};
    if (pfd.fd < 0) throw detail::notification_wait_error({}, false, where, secret);
    int ms = static_cast<int>(std::min<std::chrono::milliseconds::rep>(left.count(), INT_MAX));
    int rc = ::poll(&pfd, 1, ms);
    if (rc < 0 && errno != EINTR)
      throw detail::notification_wait_error(std::strerror(errno), still_open(), where, secret);
    if (rc <= 0) continue;  // timed out (checked above) or interrupted
    bool read = PQconsumeInput(pg) != 0;
    take_notifications(pg, out);
    if (!read && out.empty())
      throw detail::notification_wait_error(PQerrorMessage(pg), still_open(), where, secret);
  }
  return out;
}

}  // namespace dblock::soci_driver
