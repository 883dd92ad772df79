// SPDX-License-Identifier: Apache-2.0
// Flash sale: a voucher with 100 in stock, 500 buyers on concurrent threads and processes, each
// user allowed one order. Run once per lock strategy; none may oversell or sell twice to a user.
//
// The parent creates a demo voucher table and an order table whose primary key is (user,
// voucher), then, for each strategy, forks worker processes whose threads all start buying at one
// instant: 750 requests from 500 users (a third of the users ask twice). A purchase reads the
// stock, checks the user's earlier orders, writes the order and writes stock - 1 — a
// read-modify-write that only the lock keeps correct:
//
//   unique-key  UniqueKeyLock on the voucher; the purchase runs in a transaction of its own
//   row-lock    RowLock on the voucher; the purchase runs in the lease's transaction and commits
//               with the release
//   optimistic  OptimisticLock on the voucher; the purchase commits only if nobody else
//               committed under the voucher meanwhile, and is retried otherwise
//
// One line per strategy: strategy=<name> sold=<n> oversold=<n> duplicates=<n> seconds=<s>,
// checked against the database (sold counts orders; oversold counts orders past the stock;
// duplicates counts users with more than one order; stock + sold must be 100).
//
//   flash_sale [--url URL] [--processes N] [--threads T] [--strategy
//   unique-key|row-lock|optimistic]
//
// The URL defaults to DBLOCK_URL. scripts/quickstart.sh runs it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/optimistic_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "race.hpp"

namespace {

using namespace std::chrono_literals;

constexpr long kStock = 100;
constexpr long kUsers = 500;
constexpr long kRequests = 750;  // users 0..499, then 0..249 again

const std::vector<std::string> kStrategies = {"unique-key", "row-lock", "optimistic"};

// The demo's own tables, unique to this run.
struct Demo {
  std::string vouchers = "demo_vouchers_" + std::to_string(getpid());
  std::string orders = "demo_orders_" + std::to_string(getpid());
};

enum Outcome { kSold, kSoldOut, kAlreadyBought, kBusy, kError };

void create_tables(dblock::Connection& conn, const Demo& demo) {
  conn.execute("CREATE TABLE " + demo.vouchers +
               " (voucher_id VARCHAR(64) PRIMARY KEY, stock INT NOT NULL)");
  conn.execute("CREATE TABLE " + demo.orders +
               " (user_id VARCHAR(64) NOT NULL, voucher_id VARCHAR(64) NOT NULL,"
               " PRIMARY KEY (user_id, voucher_id))");  // one order per user and voucher
  for (const auto& s : kStrategies) {
    conn.execute(
        examples::placeholders(conn.dialect(), "INSERT INTO " + demo.vouchers + " VALUES (?, ?)"),
        {s, kStock});
  }
}

void drop_tables(const dblock::DatabaseUrl& url, const Demo& demo) {
  auto conn = dblock::open_connection(url);
  conn->execute("DROP TABLE IF EXISTS " + demo.orders);
  conn->execute("DROP TABLE IF EXISTS " + demo.vouchers);
}

// The purchase, inside a transaction already open on `conn` and under the voucher's lock.
Outcome buy(dblock::Connection& conn, const Demo& demo, const std::string& voucher,
            const std::string& user) {
  const dblock::Dialect d = conn.dialect();
  auto stock = conn.execute(examples::placeholders(
                                d, "SELECT stock FROM " + demo.vouchers + " WHERE voucher_id = ?"),
                            {voucher})
                   .int64_at(0, "stock");
  if (stock <= 0) return kSoldOut;
  auto earlier =
      conn.execute(examples::placeholders(d, "SELECT 1 AS found FROM " + demo.orders +
                                                 " WHERE user_id = ? AND voucher_id = ?"),
                   {user, voucher});
  if (!earlier.empty()) return kAlreadyBought;
  conn.execute(examples::placeholders(d, "INSERT INTO " + demo.orders + " VALUES (?, ?)"),
               {user, voucher});
  // Writes the value read minus one: without the lock, two buyers would both write 99.
  conn.execute(
      examples::placeholders(d, "UPDATE " + demo.vouchers + " SET stock = ? WHERE voucher_id = ?"),
      {stock - 1, voucher});
  return kSold;
}

// One purchase request with `strategy`'s lock; errors become kError (printed).
class Shop {
 public:
  Shop(dblock::ConnectionSource& pool, const Demo& demo, std::string strategy)
      : pool_(pool), demo_(demo), strategy_(std::move(strategy)) {
    if (strategy_ == "unique-key") {
      lock_ = std::make_unique<dblock::UniqueKeyLock>(pool);
    } else if (strategy_ == "row-lock") {
      lock_ = std::make_unique<dblock::RowLock>(pool);
    } else {
      dblock::OptimisticLockOptions o;
      o.retry.max_attempts = 1000;  // every buyer keeps trying until sold out
      lock_ = std::make_unique<dblock::OptimisticLock>(pool, o);
    }
  }

  int operator()(long request) {
    const std::string user = "user-" + std::to_string(request % kUsers);
    const std::string key = "voucher:" + strategy_;
    try {
      std::optional<Outcome> outcome;
      if (strategy_ == "unique-key") {
        // The lock holds no transaction: the purchase opens its own.
        outcome = dblock::with_lock(*lock_, key, 30s, {}, [&](dblock::Lease&) {
          auto conn = pool_.acquire();
          conn->begin();
          const Outcome o = buy(*conn, demo_, strategy_, user);
          conn->commit();
          return o;
        });
      } else {
        // The purchase runs in the lease's transaction; release() commits it.
        outcome = dblock::with_lock(*lock_, key, 30s, {}, [&](dblock::Lease& lease) {
          return buy(*lease.connection(), demo_, strategy_, user);
        });
      }
      return outcome ? *outcome : kBusy;
    } catch (const dblock::Error& e) {
      // A user's second request racing the first past the order check hits the primary key.
      if (e.code() == dblock::ErrorCode::kUniqueViolation) return kAlreadyBought;
      std::fprintf(stderr, "flash_sale: %s request %ld: %s\n", strategy_.c_str(), request,
                   e.what());
      return kError;
    }
  }

 private:
  dblock::ConnectionSource& pool_;
  const Demo& demo_;
  std::string strategy_;
  std::unique_ptr<dblock::Lock> lock_;
};

// Prints the strategy's line and checks it against the database. True when all is well.
bool report(const dblock::DatabaseUrl& url, const Demo& demo, const std::string& strategy,
            const examples::RaceResult& run) {
  auto conn = dblock::open_connection(url);
  const auto d = conn->dialect();
  const long sold =
      conn->execute(examples::placeholders(
                        d, "SELECT COUNT(*) AS n FROM " + demo.orders + " WHERE voucher_id = ?"),
                    {strategy})
          .int64_at(0, "n");
  const long users =
      conn->execute(examples::placeholders(d, "SELECT COUNT(DISTINCT user_id) AS n FROM " +
                                                  demo.orders + " WHERE voucher_id = ?"),
                    {strategy})
          .int64_at(0, "n");
  const long stock = conn->execute(examples::placeholders(d, "SELECT stock FROM " + demo.vouchers +
                                                                 " WHERE voucher_id = ?"),
                                   {strategy})
                         .int64_at(0, "stock");
  const long oversold = sold > kStock ? sold - kStock : 0;
  const long duplicates = sold - users;
  std::printf("strategy=%s sold=%ld oversold=%ld duplicates=%ld seconds=%.3f\n", strategy.c_str(),
              sold, oversold, duplicates, run.seconds);
  const long* n = run.sum.count;
  std::vector<std::string> problems;
  if (!run.workers_ok) problems.push_back("a worker process failed");
  if (n[kError] > 0) problems.push_back(std::to_string(n[kError]) + " requests failed");
  if (n[kBusy] > 0) problems.push_back(std::to_string(n[kBusy]) + " requests gave up");
  if (n[kSold] != sold) {
    problems.push_back(std::to_string(n[kSold]) + " purchases reported, " + std::to_string(sold) +
                       " orders stored");
  }
  if (stock + sold != kStock) {
    problems.push_back("stock " + std::to_string(stock) + " + sold " + std::to_string(sold) +
                       " is not " + std::to_string(kStock) + " (a lost update)");
  }
  if (sold != kStock) problems.push_back("sold " + std::to_string(sold) + ", not all the stock");
  for (const auto& p : problems) std::printf("FAILED (%s): %s\n", strategy.c_str(), p.c_str());
  return problems.empty() && oversold == 0 && duplicates == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  examples::RaceConfig race{4, 8, kRequests};
  bool ok_args =
      examples::parse_flags(argc, argv, {"url", "processes", "threads", "strategy"}, flags);
  if (flags.count("processes")) race.processes = std::atoi(flags["processes"].c_str());
  if (flags.count("threads")) race.threads = std::atoi(flags["threads"].c_str());
  std::vector<std::string> strategies = kStrategies;
  if (flags.count("strategy")) strategies = {flags["strategy"]};
  for (const auto& s : strategies) {
    ok_args &= std::find(kStrategies.begin(), kStrategies.end(), s) != kStrategies.end();
  }
  if (!ok_args || race.processes <= 0 || race.threads <= 0) {
    std::fprintf(stderr,
                 "usage: flash_sale [--url URL] [--processes N] [--threads T] "
                 "[--strategy unique-key|row-lock|optimistic]\n");
    return 2;
  }
  try {
    const auto url = dblock::DatabaseUrl::resolve(
        flags.count("url") ? std::optional<std::string>(flags["url"]) : std::nullopt);
    const Demo demo;
    {  // set up, then close: a connection must never be shared across fork()
      auto conn = dblock::open_connection(url);
      std::printf(
          "database: %s; %ld in stock, %ld requests from %ld users, %d processes x %d "
          "threads\n",
          conn->describe().c_str(), kStock, kRequests, kUsers, race.processes, race.threads);
      dblock::Migrator(*conn).up();
      create_tables(*conn, demo);
    }
    const bool ok = examples::with_cleanup(
        [&] {
          bool all_ok = true;
          for (const auto& strategy : strategies) {
            auto setup = [&demo, strategy](dblock::ConnectionSource& pool) -> examples::Request {
              auto shop = std::make_shared<Shop>(pool, demo, strategy);
              return [shop](long request) { return (*shop)(request); };
            };
            all_ok &= report(url, demo, strategy, examples::race(url, race, setup, kSold));
          }
          return all_ok;
        },
        [&] { drop_tables(url, demo); });
    return ok ? 0 : 1;
  } catch (const std::exception& e) {  // dblock::Error, or a failed pipe() / fork()
    std::fprintf(stderr, "flash_sale: %s\n", e.what());
    return 1;
  }
}
