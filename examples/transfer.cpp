// SPDX-License-Identifier: Apache-2.0
// Transfer: a thousand concurrent requests to transfer one asset; exactly one succeeds.
//
// The parent creates a demo asset table (asset-42, owned by alice) and a transfer log, then forks
// worker processes, each with its own pool and threads. At one instant every thread starts asking
// to transfer asset-42 from alice to a buyer of its own. A request that gets the unique-key lock
// reads the owner and, if it is still alice, transfers the asset in one transaction fenced by the
// lease's token; every other request is rejected ("busy" or "already transferred"). The parent
// adds up what the workers report and checks it against the database.
//
//   transfer [--url URL] [--processes N] [--threads T] [--requests R]
//
// The URL defaults to DBLOCK_URL. scripts/quickstart.sh runs it after the quickstart example.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "race.hpp"

namespace {

using namespace std::chrono_literals;

constexpr const char* kUsage =
    "usage: transfer [--url URL] [--processes N] [--threads T] [--requests R]\n";

// The demo's own tables, unique to this run.
struct Demo {
  std::string assets = "demo_assets_" + std::to_string(getpid());
  std::string transfers = "demo_transfers_" + std::to_string(getpid());
  std::string lock_key = assets + ":asset-42";  // the lock guards this one row
};

// What happened to a request.
enum Outcome { kTransferred, kBusy, kAlreadyTransferred, kFenced, kError };

void create_tables(dblock::Connection& conn, const Demo& demo) {
  const bool pg = conn.dialect() == dblock::Dialect::kPostgreSQL;
  conn.execute("CREATE TABLE " + demo.assets +
               " (asset_id VARCHAR(64) PRIMARY KEY, owner VARCHAR(64) NOT NULL,"
               " last_token BIGINT NOT NULL)");
  conn.execute("CREATE TABLE " + demo.transfers +
               " (fencing_token BIGINT PRIMARY KEY, asset_id VARCHAR(64) NOT NULL,"
               " from_owner VARCHAR(64) NOT NULL, to_owner VARCHAR(64) NOT NULL,"
               " transferred_at " +
               (pg ? "TIMESTAMPTZ" : "DATETIME(6)") + " NOT NULL)");
  conn.execute(
      examples::placeholders(conn.dialect(), "INSERT INTO " + demo.assets + " VALUES (?, ?, 0)"),
      {"asset-42", "alice"});
}

void drop_tables(const dblock::DatabaseUrl& url, const Demo& demo) {
  auto conn = dblock::open_connection(url);
  conn->execute("DROP TABLE IF EXISTS " + demo.transfers);
  conn->execute("DROP TABLE IF EXISTS " + demo.assets);
}

// One request: move asset-42 from alice to `buyer`, if nobody has bought it yet.
Outcome transfer(dblock::Lock& locks, dblock::ConnectionSource& pool, const Demo& demo,
                 const std::string& buyer) {
  dblock::LockOptions options;
  options.ttl = 10s;
  auto lease = locks.try_acquire(demo.lock_key, options);
  if (!lease) return kBusy;  // another request holds the lock right now

  // The critical section: read, decide, write. A connection given back with its transaction
  // still open (an exception) is rolled back.
  auto conn = pool.acquire();
  const dblock::Dialect d = conn->dialect();
  const std::int64_t token = lease->fencing_token();
  conn->begin();
  auto owner = conn->execute(
      examples::placeholders(d, "SELECT owner FROM " + demo.assets + " WHERE asset_id = ?"),
      {"asset-42"});
  if (owner.at(0, "owner") != "alice") {
    conn->rollback();
    return kAlreadyTransferred;
  }
  // Fencing: a holder whose lease expired while it was paused carries a smaller token than the
  // holder after it, so its late write matches no row.
  auto updated =
      conn->execute(examples::placeholders(d, "UPDATE " + demo.assets +
                                                  " SET owner = ?, last_token = ?"
                                                  " WHERE asset_id = ? AND last_token < ?"),
                    {buyer, token, "asset-42", token});
  if (updated.affected_rows() != 1) {
    conn->rollback();
    return kFenced;
  }
  conn->execute(
      examples::placeholders(
          d, "INSERT INTO " + demo.transfers + " VALUES (?, ?, ?, ?, " +
                 (d == dblock::Dialect::kPostgreSQL ? "clock_timestamp()" : "UTC_TIMESTAMP(6)") +
                 ")"),
      {token, "asset-42", "alice", buyer});
  conn->commit();
  return kTransferred;  // the lease is released here, when it goes out of scope
}

// What each worker process runs: one UniqueKeyLock shared by its threads, one transfer per
// request.
examples::Request transfer_requests(dblock::ConnectionSource& pool, const Demo& demo) {
  auto locks = std::make_shared<dblock::UniqueKeyLock>(pool);
  return [locks, &pool, &demo](long i) {
    try {
      return static_cast<int>(transfer(*locks, pool, demo, "buyer-" + std::to_string(i)));
    } catch (const dblock::Error& e) {
      std::fprintf(stderr, "transfer: request %ld: %s\n", i, e.what());
      return static_cast<int>(kError);
    }
  };
}

// Prints the summary and checks it against the database. Returns true when everything agrees.
bool report(const dblock::DatabaseUrl& url, const Demo& demo, const examples::RaceConfig& cfg,
            const examples::RaceResult& run) {
  const long* n = run.sum.count;
  auto conn = dblock::open_connection(url);
  const long log_rows = conn->execute("SELECT COUNT(*) AS n FROM " + demo.transfers).int64_at(0, 0);
  auto asset =
      conn->execute(examples::placeholders(conn->dialect(), "SELECT owner FROM " + demo.assets +
                                                                " WHERE asset_id = ?"),
                    {"asset-42"});
  const std::string owner = asset.at(0, 0).value_or("");
  const long rejected = n[kBusy] + n[kAlreadyTransferred] + n[kFenced];
  const long w = run.sum.winner;
  const std::string winner = w >= 0 ? "buyer-" + std::to_string(w) : "nobody";
  std::printf(
      "%ld transfer requests from %d processes x %d threads: %ld succeeded (%s), %ld "
      "rejected (%ld busy, %ld already transferred",
      cfg.requests, cfg.processes, cfg.threads, n[kTransferred], winner.c_str(), rejected, n[kBusy],
      n[kAlreadyTransferred]);
  if (n[kFenced] > 0) std::printf(", %ld fenced", n[kFenced]);
  std::printf(")");
  if (n[kError] > 0) std::printf(", %ld failed with errors", n[kError]);
  std::printf("; transfer log rows: %ld; %.3f s\n", log_rows, run.seconds);

  std::vector<std::string> problems;
  if (!run.workers_ok) problems.push_back("a worker process failed");
  if (n[kTransferred] != 1) problems.push_back(std::to_string(n[kTransferred]) + " succeeded");
  if (n[kTransferred] + rejected != cfg.requests) problems.push_back("requests went missing");
  if (log_rows != 1) problems.push_back(std::to_string(log_rows) + " rows in the transfer log");
  if (owner != winner) problems.push_back("the asset belongs to " + owner + ", not " + winner);
  return examples::verdict(problems, "exactly one transfer succeeded");
}

}  // namespace

int main(int argc, char** argv) {
  const examples::RaceProgram program{"transfer", kUsage, {4, 8, 1000}, kTransferred};
  const Demo demo;
  return examples::race_main(argc, argv, program, demo, create_tables, transfer_requests, report,
                             drop_tables);
}
