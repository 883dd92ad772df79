// SPDX-License-Identifier: Apache-2.0
#include "galera_migration_lock.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "dblock/error.hpp"
#include "dblock/owner.hpp"
#include "random.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"

namespace dblock::detail {

namespace {

const MigratorSql& sql_of(const Connection& conn) { return server_sql(conn.server()).migrator; }

}  // namespace

GaleraMigrationLock::GaleraMigrationLock(Connection& conn, const TableNames& names,
                                         std::chrono::seconds wait,
                                         std::chrono::seconds stale_after)
    : conn_(conn), names_(names), holder_(random_hex(32)) {
  const Dialect d = conn_.dialect();
  const Statement take(sql_of(conn_).cluster_lock, d, names_);
  const Statement stale(sql_of(conn_).cluster_lock_stale, d, names_);
  // The name column says who holds it, for an operator looking at a migrator that waits.
  std::string name = "migration lock of " + Owner::current_thread().to_string();
  name.resize(std::min<std::size_t>(name.size(), 255));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (int attempt = 1;; ++attempt) {
    try {
      conn_.execute(take.sql(), take.bind({{"holder", Value(holder_)}, {"name", Value(name)}}));
      return;
    } catch (const Error& e) {
      // Held: the row is there (a duplicate key), or another node's insert won certification.
      if (e.code() != ErrorCode::kUniqueViolation && e.code() != ErrorCode::kDeadlock) throw;
    }
    const Result removed = conn_.execute(
        stale.sql(),
        stale.bind({{"age_s", Value(static_cast<std::int64_t>(stale_after.count()))}}));
    if (removed.affected_rows() > 0) continue;  // its holder died holding it
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(ErrorCode::kLockWaitTimeout,
                  "another migrator, on this or another node of the Galera cluster, held the "
                  "migration lock for " +
                      std::to_string(wait.count()) +
                      " s; check for a stuck `dblock migrate up` (its row is the one with version "
                      "0 in " +
                      names_.qualified(d, "schema_migrations") + ") and try again");
    }
    // Migrations take a second or two: a short pause, random so that waiters spread out.
    std::uniform_int_distribution<int> pause_ms(20, 20 + 10 * std::min(attempt, 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(jitter_generator())));
  }
}

GaleraMigrationLock::~GaleraMigrationLock() {
  if (conn_.broken()) return;
  const Statement give_back(sql_of(conn_).cluster_unlock, conn_.dialect(), names_);
  try {
    conn_.execute(give_back.sql(), give_back.bind({{"holder", Value(holder_)}}));
  } catch (const Error&) {
    // Left for the next migrator to delete once it is stale_after old.
  }
}

}  // namespace dblock::detail
