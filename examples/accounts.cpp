// SPDX-License-Identifier: Apache-2.0
// Accounts: concurrent transfers between accounts, each locking both of its accounts at once.
//
// The parent creates ten demo accounts holding 1000 each and a ledger, then forks worker
// processes, each with its own pool and threads. Every request moves a small amount between two
// accounts, half of them in one direction and half in the other, so two requests often want
// the same two accounts in opposite orders. Each takes both keys with dblock::with_locks (one
// global key order: no deadlock), checks the balance, and moves the money in one transaction
// whose writes are fenced by each account's own fencing token. The parent checks that no money
// appeared or vanished, no balance went negative, every request finished without timing out,
// and the ledger matches.
//
//   accounts [--url URL] [--processes N] [--threads T] [--requests R]
//
// The URL defaults to DBLOCK_URL.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "race.hpp"

namespace {

using namespace std::chrono_literals;

constexpr const char* kUsage =
    "usage: accounts [--url URL] [--processes N] [--threads T] [--requests R]\n";

constexpr int kAccounts = 10;
constexpr long kOpening = 1000;

// The demo's own tables, unique to this run.
struct Demo {
  std::string accounts = "demo_accounts_" + std::to_string(getpid());
  std::string ledger = "demo_ledger_" + std::to_string(getpid());
  std::string key(int account) const { return accounts + ":" + std::to_string(account); }
};

// What happened to a request.
enum Outcome { kMoved, kInsufficient, kTimedOut, kFenced, kError };

void create_tables(dblock::Connection& conn, const Demo& demo) {
  conn.execute("CREATE TABLE " + demo.accounts +
               " (id INT PRIMARY KEY, balance BIGINT NOT NULL, last_token BIGINT NOT NULL)");
  conn.execute("CREATE TABLE " + demo.ledger +
               " (request BIGINT PRIMARY KEY, from_id INT NOT NULL, to_id INT NOT NULL,"
               " amount BIGINT NOT NULL)");
  for (int i = 0; i < kAccounts; ++i) {
    conn.execute(examples::placeholders(conn.dialect(),
                                        "INSERT INTO " + demo.accounts + " VALUES (?, ?, 0)"),
                 {i, static_cast<std::int64_t>(kOpening)});
  }
}

void drop_tables(const dblock::DatabaseUrl& url, const Demo& demo) {
  auto conn = dblock::open_connection(url);
  conn->execute("DROP TABLE IF EXISTS " + demo.ledger);
  conn->execute("DROP TABLE IF EXISTS " + demo.accounts);
}

// Moves `amount` from account `from` to `to` under `set` (both keys held), fenced by each
// account's token: a holder whose lease ended while it was paused matches no row.
Outcome move(dblock::ConnectionSource& pool, const Demo& demo, dblock::LeaseSet& set, long request,
             int from, int to, long amount) {
  auto conn = pool.acquire();
  const dblock::Dialect d = conn->dialect();
  conn->begin();
  auto balance = conn->execute(
      examples::placeholders(d, "SELECT balance FROM " + demo.accounts + " WHERE id = ?"), {from});
  if (balance.int64_at(0, "balance") < amount) {
    conn->rollback();
    return kInsufficient;
  }
  const std::string update = examples::placeholders(
      d, "UPDATE " + demo.accounts +
             " SET balance = balance + ?, last_token = ? WHERE id = ? AND last_token < ?");
  for (auto [account, delta] : {std::pair{from, -amount}, std::pair{to, amount}}) {
    const std::int64_t token = set.lease(demo.key(account)).fencing_token();
    if (conn->execute(update, {static_cast<std::int64_t>(delta), token, account, token})
            .affected_rows() != 1) {
      conn->rollback();
      return kFenced;
    }
  }
  conn->execute(examples::placeholders(d, "INSERT INTO " + demo.ledger + " VALUES (?, ?, ?, ?)"),
                {static_cast<std::int64_t>(request), from, to, static_cast<std::int64_t>(amount)});
  conn->commit();
  return kMoved;
}

// What each worker process runs: one UniqueKeyLock shared by its threads, one transfer per
// request, between accounts picked from the request number, in both directions.
examples::Request account_requests(dblock::ConnectionSource& pool, const Demo& demo) {
  auto locks = std::make_shared<dblock::UniqueKeyLock>(pool);
  return [locks, &pool, &demo](long i) {
    const int a = static_cast<int>(i % kAccounts);
    const int b = static_cast<int>((i / kAccounts + 1 + i) % kAccounts);
    const int from = b == a ? a : (i % 2 == 0 ? a : b);
    const int to = b == a ? (a + 1) % kAccounts : (i % 2 == 0 ? b : a);
    const long amount = 1 + i % 50;
    const std::vector<std::string> keys{demo.key(from), demo.key(to)};
    dblock::LockOptions options;
    options.ttl = 10s;
    try {
      auto outcome = dblock::with_locks(*locks, keys, 30s, options, [&](dblock::LeaseSet& set) {
        return move(pool, demo, set, i, from, to, amount);
      });
      return static_cast<int>(outcome ? *outcome : kTimedOut);
    } catch (const dblock::Error& e) {
      std::fprintf(stderr, "accounts: request %ld: %s\n", i, e.what());
      return static_cast<int>(kError);
    }
  };
}

// Prints the summary and checks it against the database. Returns true when everything agrees.
bool report(const dblock::DatabaseUrl& url, const Demo& demo, const examples::RaceConfig& cfg,
            const examples::RaceResult& run) {
  const long* n = run.sum.count;
  auto conn = dblock::open_connection(url);
  auto totals =
      conn->execute("SELECT SUM(balance) AS total, MIN(balance) AS lowest FROM " + demo.accounts);
  const long total = totals.int64_at(0, "total");
  const long lowest = totals.int64_at(0, "lowest");
  const long ledger = conn->execute("SELECT COUNT(*) AS n FROM " + demo.ledger).int64_at(0, 0);
  std::printf(
      "%ld transfers between %d accounts from %d processes x %d threads: %ld moved, %ld refused "
      "for want of funds, %ld timed out, %ld fenced, %ld failed; total %ld (opened with %ld), "
      "lowest balance %ld, ledger rows %ld; %.3f s\n",
      cfg.requests, kAccounts, cfg.processes, cfg.threads, n[kMoved], n[kInsufficient],
      n[kTimedOut], n[kFenced], n[kError], total, kAccounts * kOpening, lowest, ledger,
      run.seconds);

  std::vector<std::string> problems;
  if (!run.workers_ok) problems.push_back("a worker process failed");
  if (total != kAccounts * kOpening) problems.push_back("money appeared or vanished");
  if (lowest < 0) problems.push_back("a balance went negative");
  if (n[kTimedOut] != 0) problems.push_back("transfers timed out waiting for their accounts");
  if (n[kError] != 0) problems.push_back("transfers failed with errors");
  if (ledger != n[kMoved]) problems.push_back("the ledger does not match the transfers made");
  if (n[kMoved] + n[kInsufficient] + n[kTimedOut] + n[kFenced] + n[kError] != cfg.requests) {
    problems.push_back("requests went missing");
  }
  return examples::verdict(problems, "every transfer held both accounts; no money lost");
}

}  // namespace

int main(int argc, char** argv) {
  const examples::RaceProgram program{"accounts", kUsage, {4, 8, 1000}, kMoved};
  const Demo demo;
  return examples::race_main(argc, argv, program, demo, create_tables, account_requests, report,
                             drop_tables);
}
