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
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"

namespace {

using namespace std::chrono_literals;

struct Config {
  std::optional<std::string> url;
  int processes = 4;
  int threads = 8;
  int requests = 1000;
};

// The demo's own tables, unique to this run.
struct Demo {
  std::string assets = "demo_assets_" + std::to_string(getpid());
  std::string transfers = "demo_transfers_" + std::to_string(getpid());
  std::string lock_key = assets + ":asset-42";  // the lock guards this one row
};

// What happened to a request.
enum Outcome { kTransferred, kBusy, kAlreadyTransferred, kFenced, kError, kOutcomes };

// What a worker reports to the parent: requests per outcome, and who won.
struct Tally {
  long count[kOutcomes] = {};
  long winner = -1;  // the request that transferred the asset
};

// The statements below are written with MySQL's ? placeholders; PostgreSQL numbers them.
std::string sql(dblock::Dialect dialect, const std::string& text) {
  if (dialect == dblock::Dialect::kMySQL) return text;
  std::string out;
  int n = 0;
  for (char c : text) out += c == '?' ? "$" + std::to_string(++n) : std::string(1, c);
  return out;
}

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
  conn.execute(sql(conn.dialect(), "INSERT INTO " + demo.assets + " VALUES (?, ?, 0)"),
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
  auto owner = conn->execute(sql(d, "SELECT owner FROM " + demo.assets + " WHERE asset_id = ?"),
                             {"asset-42"});
  if (owner.at(0, "owner") != "alice") {
    conn->rollback();
    return kAlreadyTransferred;
  }
  // Fencing: a holder whose lease expired while it was paused carries a smaller token than the
  // holder after it, so its late write matches no row.
  auto updated = conn->execute(sql(d, "UPDATE " + demo.assets +
                                          " SET owner = ?, last_token = ?"
                                          " WHERE asset_id = ? AND last_token < ?"),
                               {buyer, token, "asset-42", token});
  if (updated.affected_rows() != 1) {
    conn->rollback();
    return kFenced;
  }
  conn->execute(
      sql(d, "INSERT INTO " + demo.transfers + " VALUES (?, ?, ?, ?, " +
                 (d == dblock::Dialect::kPostgreSQL ? "clock_timestamp()" : "UTC_TIMESTAMP(6)") +
                 ")"),
      {token, "asset-42", "alice", buyer});
  conn->commit();
  return kTransferred;  // the lease is released here, when it goes out of scope
}

// A worker process: its own pool and cfg.threads threads, which start at `start` and share the
// requests worker, worker + processes, ... Sends its tally to the parent on `results_fd`.
// Returns the process's exit status.
int run_worker(const dblock::DatabaseUrl& url, const Demo& demo, const Config& cfg, int worker,
               std::chrono::steady_clock::time_point start, int results_fd) {
  std::atomic<long> next = worker;  // the next request to make
  std::atomic<long> count[kOutcomes] = {};
  std::atomic<long> winner = -1;
  try {
    auto pool = dblock::open_pool(url, {.max_size = static_cast<std::size_t>(cfg.threads)});
    {  // open every connection before the start, so the race is not about who connects first
      std::vector<dblock::PooledConnection> warm;
      for (int i = 0; i < cfg.threads; ++i) warm.push_back(pool->acquire());
    }
    dblock::UniqueKeyLock locks(*pool);  // one per process, shared by its threads
    std::vector<std::jthread> threads;
    for (int t = 0; t < cfg.threads; ++t) {
      threads.emplace_back([&] {
        std::this_thread::sleep_until(start);
        for (long i; (i = next.fetch_add(cfg.processes)) < cfg.requests;) {
          Outcome outcome = kError;
          try {
            outcome = transfer(locks, *pool, demo, "buyer-" + std::to_string(i));
          } catch (const dblock::Error& e) {
            std::fprintf(stderr, "transfer: request %ld: %s\n", i, e.what());
          }
          ++count[outcome];
          if (outcome == kTransferred) winner = i;
        }
      });
    }
  } catch (const std::exception& e) {  // never let a worker unwind into main()
    std::fprintf(stderr, "transfer: worker %d: %s\n", worker, e.what());
    return 1;
  }
  Tally tally;
  for (int o = 0; o < kOutcomes; ++o) tally.count[o] = count[o];
  tally.winner = winner;
  // A write() this small to a pipe is atomic: reports from several workers never interleave.
  return write(results_fd, &tally, sizeof tally) == sizeof tally ? 0 : 1;
}

struct Run {
  Tally sum;                // over all workers
  bool workers_ok = false;  // every worker reported and exited 0
  double seconds = 0;       // from the start to the last report
};

// Forks the workers, starts them together and adds up their tallies.
Run run_workers(const dblock::DatabaseUrl& url, const Demo& demo, const Config& cfg) {
  int results[2];
  if (pipe(results) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  // steady_clock is CLOCK_MONOTONIC, the same in every process: all threads start at `start`.
  // A second is ample to fork and connect; a worker that is late joins the race late.
  const auto start = std::chrono::steady_clock::now() + 1s;
  std::vector<pid_t> pids;
  for (int w = 0; w < cfg.processes; ++w) {
    const pid_t pid = fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) {
      close(results[0]);
      const int status = run_worker(url, demo, cfg, w, start, results[1]);
      std::fflush(nullptr);
      _exit(status);  // leave without running the parent's destructors and atexit handlers
    }
    pids.push_back(pid);
  }
  close(results[1]);  // so that reading ends once every worker has closed its end

  Run run;
  Tally t;
  int reports = 0;
  while (read(results[0], &t, sizeof t) == sizeof t) {
    for (int o = 0; o < kOutcomes; ++o) run.sum.count[o] += t.count[o];
    if (t.winner >= 0) run.sum.winner = t.winner;
    ++reports;
  }
  close(results[0]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.workers_ok = reports == cfg.processes;
  for (pid_t pid : pids) {
    int status = 0;
    run.workers_ok &=
        waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return run;
}

// Prints the summary and checks it against the database. Returns true when everything agrees.
bool report(const dblock::DatabaseUrl& url, const Demo& demo, const Config& cfg, const Run& run) {
  const long* n = run.sum.count;
  auto conn = dblock::open_connection(url);
  const long log_rows = conn->execute("SELECT COUNT(*) AS n FROM " + demo.transfers).int64_at(0, 0);
  auto asset = conn->execute(
      sql(conn->dialect(), "SELECT owner FROM " + demo.assets + " WHERE asset_id = ?"),
      {"asset-42"});
  const std::string owner = asset.at(0, 0).value_or("");
  const long rejected = n[kBusy] + n[kAlreadyTransferred] + n[kFenced];
  const long w = run.sum.winner;
  const std::string winner = w >= 0 ? "buyer-" + std::to_string(w) : "nobody";
  std::printf(
      "%d transfer requests from %d processes x %d threads: %ld succeeded (%s), %ld "
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
  for (const auto& p : problems) std::printf("FAILED: %s\n", p.c_str());
  if (problems.empty()) std::printf("OK: exactly one transfer succeeded\n");
  return problems.empty();
}

bool parse_args(int argc, char** argv, Config& cfg) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--url")
      cfg.url = argv[i + 1];
    else if (flag == "--processes")
      cfg.processes = std::atoi(argv[i + 1]);
    else if (flag == "--threads")
      cfg.threads = std::atoi(argv[i + 1]);
    else if (flag == "--requests")
      cfg.requests = std::atoi(argv[i + 1]);
    else
      return false;
  }
  return argc % 2 == 1 && cfg.processes > 0 && cfg.threads > 0 && cfg.requests > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (!parse_args(argc, argv, cfg)) {
    std::fprintf(stderr,
                 "usage: transfer [--url URL] [--processes N] [--threads T] "
                 "[--requests R]\n");
    return 2;
  }
  try {
    const auto url = dblock::DatabaseUrl::resolve(cfg.url);
    const Demo demo;
    {  // set up, then close: a connection must never be shared across fork()
      auto conn = dblock::open_connection(url);
      std::printf("database: %s\n", conn->describe().c_str());
      dblock::Migrator(*conn).up();
      create_tables(*conn, demo);
    }
    std::fflush(stdout);  // or the children print it again
    bool ok = false;
    try {
      ok = report(url, demo, cfg, run_workers(url, demo, cfg));
    } catch (...) {
      try {
        drop_tables(url, demo);
      } catch (const dblock::Error&) {  // report the first error, not this one
      }
      throw;
    }
    drop_tables(url, demo);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {  // dblock::Error, or a failed pipe() / fork()
    std::fprintf(stderr, "transfer: %s\n", e.what());
    return 1;
  }
}
