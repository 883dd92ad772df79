// SPDX-License-Identifier: Apache-2.0
// Waiting for PostgreSQL notifications on a libpq handle: shared by the libpq driver and the
// SOCI driver's PostgreSQL sessions, both of which hold a PGconn. Internal; header-only so that
// either driver target can use it without linking the other.
//
// Notifications are not lost between statements and waits: libpq queues each notification it
// reads, during any statement too, until PQnotifies() takes it, and neither driver calls
// PQnotifies() anywhere else; wait_for_notifications() takes the queue first.
//
// Thread-safety: each function uses the handle it is given; one thread at a time per session.
#pragma once

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "drivers/driver_connection.hpp"

namespace dblock::libpq_driver {

// Moves the notifications libpq has queued on `pg` to `out`.
inline void take_notifications(PGconn* pg, std::vector<Notification>& out) {
  auto free_notify = [](PGnotify* n) { PQfreemem(n); };
  while (std::unique_ptr<PGnotify, decltype(free_notify)> n{PQnotifies(pg), free_notify}) {
    out.push_back(Notification{n->relname, n->extra == nullptr ? "" : n->extra});
  }
}

// Connection::wait_for_notifications() on a PostgreSQL session. Notifications libpq queued while
// earlier statements ran come back at once; otherwise waits (poll(), EINTR-safe) on the socket up
// to `timeout` and lets libpq read (PQconsumeInput) until one arrives. Notifications read before
// the connection broke are returned first. Throws Error(kConnectionLost) when the connection is
// (or becomes) unusable: `pg` null, `broken` set, or a failed read on a closed connection; other
// failures are Error(kOther). `where` names the server; `secret` is scrubbed from the text.
inline std::vector<Notification> wait_for_notifications(PGconn* pg, bool broken,
                                                        std::chrono::milliseconds timeout,
                                                        std::string_view where,
                                                        std::string_view secret) {
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

}  // namespace dblock::libpq_driver
