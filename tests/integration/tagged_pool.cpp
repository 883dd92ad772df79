// SPDX-License-Identifier: Apache-2.0
#include "tagged_pool.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {

TaggedPool::TaggedPool(const Backend& backend, std::size_t max_size)
    : state_(std::make_shared<State>()) {
  state_->backend = backend;
  state_->tag = unique_name("dblock_model_");
  std::shared_ptr<State> state = state_;
  ConnectionFactory factory = [state]() -> std::unique_ptr<Connection> {
    if (state->refuse) {
      throw Error(ErrorCode::kConnectFailed, "the model test refuses connections (an outage)");
    }
    auto conn = open_connection(state->backend.url());
    if (state->backend.dialect == Dialect::kPostgreSQL) {
      conn->execute("SELECT set_config('application_name', $1, false)", {Value(state->tag)});
    } else {
      const std::int64_t id = state->backend.session_id(*conn);
      std::lock_guard lock(state->mu);
      state->mysql_ids.push_back(id);
    }
    // A connection opened while an outage began: tagged after kill_sessions listed the
    // sessions it would end, it would outlive the outage. Tagged before refuse was set, it is
    // on that list; tagged after, it is refused here.
    if (state->refuse) {
      throw Error(ErrorCode::kConnectFailed, "the model test refuses connections (an outage)");
    }
    return conn;
  };
  pool_ = std::make_unique<Pool>(backend.dialect, std::move(factory),
                                 PoolOptions{.max_size = max_size});
}

int TaggedPool::kill_sessions(Connection& killer) {
  const Backend& b = state_->backend;
  int killed = 0;
  std::string killed_ids;  // MySQL: "1,2,3", integers read from the server
  // PostgreSQL: (pid, backend_start) of each killed session. Only these are waited for: a
  // connection being opened meanwhile is tagged after its backend started, so it can carry the
  // tag, unlisted and alive, with a start time before the killed ones'.
  std::vector<std::pair<std::int64_t, std::string>> killed_pg;
  if (b.dialect == Dialect::kPostgreSQL) {
    // The lock's listener reconnects at once under the same tag: wait for the killed sessions
    // only, by pid and start time (a pid may be reused).
    auto r = killer.execute(
        "SELECT pid, backend_start::text AS started FROM pg_stat_activity"
        " WHERE application_name = $1 AND pid <> pg_backend_pid() ORDER BY backend_start",
        {Value(state_->tag)});
    for (std::size_t i = 0; i < r.size(); ++i) {
      // CASE, not AND in a WHERE clause: the server may evaluate the quals in any order, and
      // must never signal a session that is not this pool's.
      killer.execute(
          "SELECT CASE WHEN application_name = $2 AND backend_start = $3::timestamptz"
          " THEN pg_terminate_backend(pid) END AS killed FROM pg_stat_activity WHERE pid = $1",
          {Value(r.int64_at(i, "pid")), Value(state_->tag), Value(*r.at(i, "started"))});
      ++killed;
      killed_pg.emplace_back(r.int64_at(i, "pid"), *r.at(i, "started"));
    }
  } else {
    std::vector<std::int64_t> ids;
    {
      std::lock_guard lock(state_->mu);
      ids.swap(state_->mysql_ids);
    }
    for (std::int64_t id : ids) {
      try {
        b.kill_session(killer, id);
        ++killed;
        killed_ids += (killed_ids.empty() ? "" : ",") + std::to_string(id);
      } catch (const Error&) {
        // Already gone (the pool dropped it): "unknown thread id".
      }
    }
  }
  // Wait until the server has ended them: pg_terminate_backend only signals the backend.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    std::int64_t left = 0;
    if (b.dialect == Dialect::kPostgreSQL) {
      for (const auto& [pid, started] : killed_pg) {
        left += killer
                    .execute(
                        "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = $1"
                        " AND backend_start = $2::timestamptz",
                        {Value(pid), Value(started)})
                    .int64_at(0, "n");
      }
    } else if (!killed_ids.empty()) {
      left = killer
                 .execute("SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id IN (" +
                          killed_ids + ")")
                 .int64_at(0, "n");
    }
    if (left == 0) return killed;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("killed sessions of the model test's pool did not end in 5 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace dblock::testing
