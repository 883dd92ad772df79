// SPDX-License-Identifier: Apache-2.0
// Fenced transactions (dblock/fence.hpp), against every database x driver pair, from the side of
// the guarantee: a holder's writes never land after the next holder got the key. A holder
// paused (SIGSTOP) past its TTL and taken over cannot commit through a fenced transaction, and
// none of its rows exist; a holder paused inside a fenced transaction holds the takeover back
// until its commit. Each runs with fencing switched off too, and there shows the failure the
// fence prevents, so the test can fail. Then what fence() refuses, and what it does for each
// lease kind.
#include "dblock/fence.hpp"

#include <signal.h>

#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "backends.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/open.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kTtlMs = 1000;

// The code of the dblock::Error `fn` throws; nullopt when it throws none.
template <class Fn>
std::optional<ErrorCode> thrown_code(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}
#define EXPECT_THROW_CODE(stmt, code) EXPECT_EQ(thrown_code([&] { stmt; }), code)

// How fence(held, conn) is refused in a transaction begun for it on `conn` and rolled back after:
// the code of the dblock::Error it throws, nullopt when it fences.
template <class Held>
std::optional<ErrorCode> fence_refusal(const Held& held, Connection& conn) {
  conn.begin();
  const std::optional<ErrorCode> code = thrown_code([&] { fence(held, conn); });
  conn.rollback();
  return code;
}

class FenceTest : public MigratedPoolTest {
 protected:
  FenceTest() : MigratedPoolTest("f", 6) {}
  void SetUp() override {
    MigratedPoolTest::SetUp();
    writes_ = tables_.prefix() + "writes";  // dropped with the prefix's tables
    pool_->acquire()->execute("CREATE TABLE " + writes_ +
                              " (token BIGINT NOT NULL, writer VARCHAR(20) NOT NULL)");
    url_ = std::getenv(backend().url_env.c_str());
    url_ += (url_.find('?') == std::string::npos ? "?" : "&") + std::string("driver=") +
            backend().driver;
  }
  std::string param() const { return backend().dialect == Dialect::kPostgreSQL ? "$1" : "?"; }

  std::unique_ptr<Lock> make(const std::string& kind) {
    if (kind == "semaphore")
      return std::make_unique<Semaphore>(*pool_, 1, SemaphoreOptions{tables_});
    return std::make_unique<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{tables_});
  }
  // The lock that competes with a worker (worker()) of `kind`: the same kind, or the other side
  // of its reader-writer lock (the worker's has 2 readers).
  Lock& contender(const std::string& kind) {
    if (kind != "writer" && kind != "reader") return *owned_.emplace_back(make(kind));
    ReadWriteLockOptions options;
    options.tables = tables_;
    options.max_readers = 2;
    ReadWriteLock& rw = *rw_.emplace_back(std::make_unique<ReadWriteLock>(*pool_, options));
    return kind == "writer" ? rw.reader() : rw.writer();
  }
  // Owner "a"'s lease of `key`, left to run out unrenewed (300 ms), and owner "b"'s, taken once
  // it has (within 10 s).
  struct TakenOver {
    std::optional<Lease> stale, next;
  };
  TakenOver taken_over(Lock& lock, const std::string& key) {
    TakenOver out;
    out.stale = lock.try_acquire(key, as("a", milliseconds(300), false));
    if (!out.stale) return out;
    const auto deadline = Clock::now() + milliseconds(10000);
    while (!out.next && Clock::now() < deadline) {
      out.next = lock.try_acquire(key, as("b"));
      if (!out.next) std::this_thread::sleep_for(milliseconds(50));
    }
    return out;
  }
  ChildProcess worker(const std::string& kind, bool fenced, const std::string& when) const {
    return ChildProcess({DBLOCK_LOCK_WORKER_PATH, "fence", url_, tables_.prefix(), kind, "job",
                         std::to_string(kTtlMs), writes_, fenced ? "1" : "0", when},
                        {});
  }
  static std::int64_t token_in(const std::string& output) {
    const auto pos = output.find("token ");
    return pos == std::string::npos ? -1 : std::stoll(output.substr(pos + 6));
  }
  // Waits (up to 10 s) until `holder` prints `ready`, then pauses it (SIGSTOP: its renewer stops
  // with it, so its lease runs out): the token it holds, or nullopt (a failure) if never ready.
  static std::optional<std::int64_t> paused_once(ChildProcess& holder, const std::string& ready) {
    if (!holder.wait_for_output(ready, milliseconds(10000))) {
      ADD_FAILURE() << "never printed \"" << ready << "\": " << holder.output_so_far();
      return std::nullopt;
    }
    const std::int64_t token = token_in(holder.output_so_far());
    holder.signal(SIGSTOP);
    return token;
  }
  // Writes (token, writer) in a transaction fenced by `lease`, and commits.
  void write_fenced(const Lease& lease, const std::string& writer) {
    auto conn = pool_->acquire();
    conn->begin();
    fence(lease, *conn);
    conn->execute(
        "INSERT INTO " + writes_ + " (token, writer) VALUES (" + param() + ", '" + writer + "')",
        {Value(lease.fencing_token())});
    conn->commit();
  }
  // The writes committed, in the order of their tokens: "token:writer ...".
  std::string history() {
    const Result r = pool_->acquire()->execute("SELECT token, writer FROM " + writes_ +
                                               " ORDER BY token, writer");
    std::string out;
    for (std::size_t i = 0; i < r.size(); ++i) {
      out += (out.empty() ? "" : " ") + r.at(i, "token").value_or("") + ':' +
             r.at(i, "writer").value_or("");
    }
    return out;
  }

  // `body(fenced)` for a fenced holder of `kind` and an unfenced one, each traced; the writes are
  // cleared after each.
  void fenced_and_not(const std::string& kind, const std::function<void(bool)>& body) {
    for (const bool fenced : {true, false}) {
      SCOPED_TRACE(kind + (fenced ? " fenced" : " not fenced (the failure fencing prevents)"));
      body(fenced);
      pool_->acquire()->execute("DELETE FROM " + writes_);
    }
  }

  // A holder (worker() of `kind`) paused past its TTL before its transaction, and the key taken
  // meanwhile: fenced, its commit is refused and writes nothing; unfenced, its write lands after
  // the next holder's.
  void paused_before_its_transaction(const std::string& kind) {
    fenced_and_not(kind, [&](bool fenced) {
      ChildProcess holder = worker(kind, fenced, "before");
      const std::optional<std::int64_t> stale = paused_once(holder, "token ");
      ASSERT_TRUE(stale);
      auto lease = contender(kind).acquire("job", milliseconds(10000), as("next"));
      ASSERT_TRUE(lease);
      ASSERT_GT(lease->fencing_token(), *stale);
      write_fenced(*lease, "next");
      holder.signal(SIGCONT);
      holder.signal(SIGUSR1);
      const ProcessResult r = holder.wait();
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const std::string next = std::to_string(lease->fencing_token()) + ":next";
      if (fenced) {
        EXPECT_NE(r.out.find("commit=lease_lost"), std::string::npos) << r.out;
        EXPECT_EQ(history(), next);
      } else {
        EXPECT_NE(r.out.find("commit=ok"), std::string::npos) << r.out;
        EXPECT_EQ(history(), std::to_string(*stale) + ":worker " + next);
      }
      EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    });
  }
  // A holder (worker() of `kind`) paused past its TTL inside its fenced transaction: the next
  // acquire waits for its commit; unfenced, it goes ahead while the paused write is still to
  // come.
  void paused_inside_its_transaction(const std::string& kind) {
    fenced_and_not(kind, [&](bool fenced) {
      ChildProcess holder = worker(kind, fenced, "inside");
      const std::optional<std::int64_t> stale = paused_once(holder, "fenced");
      ASSERT_TRUE(stale);
      Lock& lock = contender(kind);
      auto taken = std::async(std::launch::async,
                              [&] { return lock.acquire("job", milliseconds(15000), as("next")); });
      // Well past the paused holder's TTL: unfenced, the key is taken meanwhile.
      const bool taken_while_paused =
          taken.wait_for(milliseconds(4 * kTtlMs)) == std::future_status::ready;
      holder.signal(SIGCONT);
      holder.signal(SIGUSR1);
      std::optional<Lease> lease = taken.get();
      const ProcessResult r = holder.wait();
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_TRUE(lease);
      ASSERT_GT(lease->fencing_token(), *stale);
      EXPECT_NE(r.out.find("commit=ok"), std::string::npos) << r.out;
      EXPECT_EQ(taken_while_paused, !fenced);
      EXPECT_EQ(history(), std::to_string(*stale) + ":worker");
      EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    });
  }

  std::string writes_;
  std::string url_;
  std::vector<std::unique_ptr<Lock>> owned_;
  std::vector<std::unique_ptr<ReadWriteLock>> rw_;
};

// A holder paused past its TTL, taken over, then resumed: its fenced transaction is refused and
// writes nothing; unfenced, its write lands after the new holder's. (The resumed holder's own
// clock already counts its lease lost here; a lease the holder still thinks live is refused by
// the database: the operator case below.)
TEST_P(FenceTest, AHolderPausedPastItsTtlAndTakenOverCannotCommit) {
  for (const std::string kind : {"unique", "semaphore"}) paused_before_its_transaction(kind);
}

// A reader-writer lock's writer paused past its TTL while a reader got in (and the other way
// round): the paused side's fenced commit is refused.
TEST_P(FenceTest, AReaderOrWriterPausedPastItsTtlCannotCommitOnceTheOtherSideGotIn) {
  for (const std::string kind : {"writer", "reader"}) paused_before_its_transaction(kind);
}

TEST_P(FenceTest, AHolderPausedInsideAFencedTransactionHoldsTheTakeoverBackUntilItCommits) {
  for (const std::string kind : {"unique", "semaphore"}) paused_inside_its_transaction(kind);
}

// A writer paused inside its fenced transaction holds every reader back until its commit (a
// reader's admission share-locks slot 0, which the writer's fence locks exclusively); a reader
// paused inside its fenced transaction holds the writer back (the writer's look at the reader
// slots locks them exclusively).
TEST_P(FenceTest, AReaderOrWriterPausedInsideAFencedTransactionHoldsTheOtherSideBack) {
  for (const std::string kind : {"writer", "reader"}) paused_inside_its_transaction(kind);
}

TEST_P(FenceTest, AFencedTransactionCommitsWhileTheLeaseIsHeldAndTheTakeoverComesAfter) {
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  auto lease = locks.try_acquire("asset", as("a"));
  ASSERT_TRUE(lease);
  write_fenced(*lease, "a");
  Semaphore sem(*pool_, 2, SemaphoreOptions{tables_});
  auto permit = sem.try_acquire("pool", as("a"));
  ASSERT_TRUE(permit);
  write_fenced(*permit, "p");
  EXPECT_EQ(history(), std::to_string(lease->fencing_token()) + ":a " +
                           std::to_string(permit->fencing_token()) + ":p");
  // The holder's own renewal still works once the fenced transaction ended.
  EXPECT_TRUE(lease->renew());
  EXPECT_TRUE(permit->renew());
}

TEST_P(FenceTest, ALeaseLostBeforeTheFenceIsRefusedAndWritesNothing) {
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  auto [lease, next] = taken_over(locks, "asset");
  ASSERT_TRUE(lease);
  ASSERT_TRUE(next);
  auto conn = pool_->acquire();
  conn->begin();
  try {
    fence(*lease, *conn);
    FAIL() << "a lease taken over was fenced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLeaseLost) << e.what();
    EXPECT_NE(std::string(e.what()).find("roll this transaction back"), std::string::npos);
  }
  conn->rollback();
  conn.reset();
  EXPECT_EQ(history(), "");
}

TEST_P(FenceTest, ALeaseTheHolderStillThinksLiveIsRefusedByTheDatabaseOnceTakenOver) {
  // An operator frees the key (`dblock release`) and another owner takes it: the holder's own
  // clock says nothing is wrong (lost() is false), so only the fence's statement can refuse it.
  for (const std::string kind : {"unique", "semaphore"}) {
    SCOPED_TRACE(kind);
    auto lock = make(kind);
    auto lease = lock->try_acquire("asset", as("a"));
    ASSERT_TRUE(lease);
    {
      auto admin = pool_->acquire();
      if (kind == "semaphore") {
        const auto permits = list_permits(*admin, tables_);
        ASSERT_EQ(permits.size(), 1u);
        ASSERT_TRUE(release_permit_row(*admin, tables_, permits[0]));
      } else {
        const auto rows = list_locks(*admin, tables_);
        ASSERT_EQ(rows.size(), 1u);
        ASSERT_TRUE(release_lock_row(*admin, tables_, rows[0]));
      }
    }
    auto next = lock->try_acquire("asset", as("b"));
    ASSERT_TRUE(next);
    ASSERT_FALSE(lease->lost());
    EXPECT_EQ(fence_refusal(*lease, *pool_->acquire()), ErrorCode::kLeaseLost);
    write_fenced(*next, "b");
    EXPECT_EQ(history(), std::to_string(next->fencing_token()) + ":b");
    pool_->acquire()->execute("DELETE FROM " + writes_);
  }
}

TEST_P(FenceTest, ARenewedLeaseThatTheLocalClockCallsLostIsRefusedWithoutAStatement) {
  // lost() by the local clock (a TTL since the last renewal was sent) is enough: fence() does not
  // ask the database about a lease this process already counts as gone.
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  auto lease = locks.try_acquire("asset", as("a", milliseconds(200), false));
  ASSERT_TRUE(lease);
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(lease->lost());
  EXPECT_EQ(fence_refusal(*lease, *pool_->acquire()), ErrorCode::kLeaseLost);
}

// For a resource a fence cannot cover (another database, a service): the recipe of
// docs/locks/fencing.md, a last_token column that only a larger token may move. A holder taken
// over writes with its smaller token and changes nothing, whatever the order of the writes.
TEST_P(FenceTest, ATokenColumnRefusesTheWriteOfAHolderTakenOver) {
  const std::string resource = tables_.prefix() + "resource";
  pool_->acquire()->execute("CREATE TABLE " + resource +
                            " (id INT PRIMARY KEY, owner VARCHAR(20) NOT NULL,"
                            " last_token BIGINT NOT NULL)");
  pool_->acquire()->execute("INSERT INTO " + resource + " VALUES (1, 'nobody', 0)");
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  const std::string write = "UPDATE " + resource + " SET owner = " + (pg ? "$1" : "?") +
                            ", last_token = " + (pg ? "$2" : "?") +
                            " WHERE id = 1 AND last_token < " + (pg ? "$2" : "?");
  const auto write_as = [&](const std::string& owner, std::int64_t token) {
    const std::vector<Value> params =
        pg ? std::vector<Value>{Value(owner), Value(token)}
           : std::vector<Value>{Value(owner), Value(token), Value(token)};
    return pool_->acquire()->execute(write, params).affected_rows();
  };
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  auto [stale, next] = taken_over(locks, "resource:1");
  ASSERT_TRUE(stale);
  ASSERT_TRUE(next);
  EXPECT_EQ(write_as("b", next->fencing_token()), 1u);
  EXPECT_EQ(write_as("a", stale->fencing_token()), 0u) << "a holder taken over wrote";
  const Result r =
      pool_->acquire()->execute("SELECT owner, last_token FROM " + resource + " WHERE id = 1");
  EXPECT_EQ(r.at(0, "owner"), "b");
  EXPECT_EQ(r.int64_at(0, "last_token"), next->fencing_token());
  pool_->acquire()->execute("DROP TABLE " + resource);
}

TEST_P(FenceTest, AFenceOutsideATransactionIsRefused) {
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  auto lease = locks.try_acquire("asset", as("a"));
  ASSERT_TRUE(lease);
  auto conn = pool_->acquire();
  try {
    fence(*lease, *conn);
    FAIL() << "a fence in autocommit was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("call begin() first"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fence_refusal(Lease(), *conn), ErrorCode::kInvalidArgument);
}

TEST_P(FenceTest, ALockSetIsFencedOnEveryKey) {
  UniqueKeyLock locks(*pool_, UniqueKeyLockOptions{tables_});
  const std::vector<std::string> keys = {"a", "b", "c"};
  auto set = try_acquire_all(locks, keys, as("set", milliseconds(300), false));
  ASSERT_TRUE(set);
  {
    auto conn = pool_->acquire();
    conn->begin();
    fence(*set, *conn);  // all three held
    conn->rollback();
  }
  // One key taken over: the set's fence is refused.
  std::this_thread::sleep_for(milliseconds(400));
  auto other = locks.try_acquire("b", as("other"));
  ASSERT_TRUE(other);
  EXPECT_EQ(fence_refusal(*set, *pool_->acquire()), ErrorCode::kLeaseLost);
}

TEST_P(FenceTest, TransactionalLeasesAreFencedByTheirOwnConnectionOnly) {
  RowLock rows(*pool_, RowLockOptions{tables_});
  auto lease = rows.try_acquire("row", as("a"));
  ASSERT_TRUE(lease);
  ASSERT_NE(lease->connection(), nullptr);
  fence(*lease, *lease->connection());  // its transaction is the lock: nothing to add
  EXPECT_EQ(fence_refusal(*lease, *pool_->acquire()), ErrorCode::kInvalidArgument);
}

TEST_P(FenceTest, ReaderWriterLeasesAreFencedWhileHeld) {
  ReadWriteLockOptions options;
  options.tables = tables_;
  options.max_readers = 2;
  ReadWriteLock rw(*pool_, options);
  auto writer = rw.writer().try_acquire("doc", as("w"));
  ASSERT_TRUE(writer);
  write_fenced(*writer, "w");
  EXPECT_TRUE(writer->renew());  // the fenced transaction ended: the writer's row is free again
  const std::string w = std::to_string(writer->fencing_token()) + ":w";
  EXPECT_EQ(writer->release(), ReleaseOutcome::kReleased);
  auto r1 = rw.reader().try_acquire("doc", as("r1"));
  auto r2 = rw.reader().try_acquire("doc", as("r2"));
  ASSERT_TRUE(r1);
  ASSERT_TRUE(r2);
  // Two readers' fenced transactions at once: neither waits for the other.
  auto c1 = pool_->acquire();
  auto c2 = pool_->acquire();
  c1->begin();
  c2->begin();
  fence(*r1, *c1);
  fence(*r2, *c2);
  c1->commit();
  c2->commit();
  // A reader admitted while another reader's fenced transaction is open.
  write_fenced(*r1, "r1");
  const std::string r1_wrote = std::to_string(r1->fencing_token()) + ":r1";
  auto r3_conn = pool_->acquire();
  r3_conn->begin();
  fence(*r2, *r3_conn);
  EXPECT_EQ(r1->release(), ReleaseOutcome::kReleased);
  auto r3 = rw.reader().try_acquire("doc", as("r3"));
  EXPECT_TRUE(r3);
  r3_conn->rollback();
  EXPECT_EQ(history(), w + " " + r1_wrote);
}

TEST_P(FenceTest, ASessionLeaseIsFencedByItsOwnBorrowedConnectionOnly) {
  SessionLock sessions(*pool_, SessionLockOptions{tables_});
  auto lease = sessions.try_acquire("s", as("s"));
  ASSERT_TRUE(lease);
  EXPECT_EQ(fence_refusal(*lease, *pool_->acquire()), ErrorCode::kInvalidArgument);
  {
    SessionConnection conn(*lease);
    EXPECT_THROW_CODE(SessionConnection again(*lease), ErrorCode::kFailedPrecondition);
    conn->begin();
    fence(*lease, *conn);
    conn->execute("INSERT INTO " + writes_ + " (token, writer) VALUES (" + param() + ", 's')",
                  {Value(lease->fencing_token())});
    EXPECT_TRUE(lease->renew());  // on the borrowing thread: no statement in the transaction
    conn->commit();
    conn->begin();  // left open: the borrow's end rolls it back
    conn->execute("INSERT INTO " + writes_ + " (token, writer) VALUES (0, 'rolled back')");
  }
  EXPECT_EQ(history(), std::to_string(lease->fencing_token()) + ":s");
  EXPECT_TRUE(lease->renew());  // the connection is the lease's again
  // Released on the borrowing thread: the lock goes with the borrow's end.
  {
    SessionConnection conn(*lease);
    EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
    EXPECT_FALSE(sessions.try_acquire("s", as("t"))) << "released before the borrow ended";
  }
  EXPECT_TRUE(sessions.try_acquire("s", as("t")));
  Lease empty;
  EXPECT_THROW_CODE(SessionConnection none(empty), ErrorCode::kInvalidArgument);
}

// A session holder writes in a transaction on its own connection; its session is killed from
// outside and another owner takes the lock: the commit fails, and none of its rows exist. The
// same writes on another connection (unfenced) commit after the loss.
TEST_P(FenceTest, ASessionHolderWhoseSessionWasKilledCannotCommit) {
  SessionLock sessions(*pool_, SessionLockOptions{tables_});
  for (const bool own : {true, false}) {
    SCOPED_TRACE(own ? "on the session's own connection"
                     : "on another connection (the failure the session's fence prevents)");
    auto lease = sessions.try_acquire("job", as("a"));
    ASSERT_TRUE(lease);
    std::optional<SessionConnection> borrowed;
    borrowed.emplace(*lease);
    const std::int64_t session = backend().session_id(**borrowed);
    PooledConnection other;
    Connection* conn = &**borrowed;
    if (!own) {
      other = pool_->acquire();
      conn = other.get();
    }
    conn->begin();
    if (own) fence(*lease, *conn);
    conn->execute("INSERT INTO " + writes_ + " (token, writer) VALUES (" + param() + ", 'a')",
                  {Value(lease->fencing_token())});
    backend().kill_session(*pool_->acquire(), session);
    std::optional<Lease> next;
    const auto deadline = Clock::now() + milliseconds(10000);
    while (!next && Clock::now() < deadline) {
      next = sessions.try_acquire("job", as("b"));
      if (!next) std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_TRUE(next) << "the killed session's lock was not freed";
    EXPECT_TRUE(lease->lost());
    std::optional<ErrorCode> commit = thrown_code([&] { conn->commit(); });
    if (own) {
      EXPECT_TRUE(commit.has_value()) << "a killed session committed";
      EXPECT_EQ(history(), "");
    } else {
      EXPECT_EQ(commit, std::nullopt);
      EXPECT_EQ(history(), std::to_string(lease->fencing_token()) + ":a");
    }
    borrowed.reset();
    other = PooledConnection();
    EXPECT_THROW_CODE(lease->release(), ErrorCode::kLeaseLost);
    EXPECT_EQ(next->release(), ReleaseOutcome::kReleased);
    pool_->acquire()->execute("DELETE FROM " + writes_);
  }
}

// Another service on the same database checks a lease's token in its own transaction, in plain
// SQL (migration 0008, docs/locks/fencing.md): on PostgreSQL through fence_token() or a locking
// read of a view, on MySQL and MariaDB through a locking read of a view. While its transaction is
// open, a takeover of the lease, expired meanwhile, waits for it; the token taken over is then
// refused. Read without a lock (the control), the view holds the takeover back not at all.
TEST_P(FenceTest, AServiceCheckingATokenInSqlHoldsTheTakeoverBackUntilItCommits) {
  const Dialect d = backend().dialect;
  const bool pg = d == Dialect::kPostgreSQL;
  const std::string p1 = pg ? "$1::text" : "?";
  const std::string p2 = pg ? "$2::bigint" : "?";
  const std::string share = pg ? " FOR SHARE" : " LOCK IN SHARE MODE";
  struct Check {
    std::string via;
    std::string sql;  // one row while the token is held
    bool locks;
  };
  for (const std::string kind : {"unique", "semaphore"}) {
    const std::string view = tables_.qualified(d, kind == "unique" ? "live_locks" : "live_permits");
    const std::string by_view =
        "SELECT 1 AS held FROM " + view + " WHERE lock_key = " + p1 + " AND fencing_token = " + p2;
    std::vector<Check> checks = {{"view", by_view + share, true},
                                 {"view read without a lock (control)", by_view, false}};
    if (pg) {
      checks.push_back({"fence_token()",
                        "SELECT 1 AS held WHERE " + tables_.qualified(d, "fence_token") + "(" + p1 +
                            ", " + p2 + ")",
                        true});
    }
    for (const Check& check : checks) {
      SCOPED_TRACE(kind + " through " + check.via);
      auto lock = make(kind);
      const std::string key = "svc:" + check.via;
      auto lease = lock->try_acquire(key, as("a", milliseconds(300), false));
      ASSERT_TRUE(lease);
      const std::vector<Value> held = {Value(key), Value(lease->fencing_token())};
      auto service = pool_->acquire();
      service->begin();
      EXPECT_EQ(service->execute(check.sql, held).size(), 1u);
      std::this_thread::sleep_for(milliseconds(500));  // the lease runs out
      auto taken = std::async(std::launch::async,
                              [&] { return lock->acquire(key, milliseconds(10000), as("b")); });
      const bool taken_while_open = taken.wait_for(milliseconds(1500)) == std::future_status::ready;
      service->commit();
      std::optional<Lease> next = taken.get();
      ASSERT_TRUE(next);
      EXPECT_EQ(taken_while_open, !check.locks);
      service->begin();
      EXPECT_EQ(service->execute(check.sql, held).size(), 0u) << "a token taken over passed";
      EXPECT_EQ(service->execute(check.sql, {Value(key), Value(next->fencing_token())}).size(), 1u);
      service->rollback();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, FenceTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
