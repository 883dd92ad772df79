// SPDX-License-Identifier: Apache-2.0
#include "dblock/session_lock.hpp"

#include <atomic>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "dblock/error.hpp"
#include "galera.hpp"
#include "hold_registry.hpp"
#include "lease_access.hpp"
#include "lease_core.hpp"
#include "observed_acquire.hpp"
#include "retry_until.hpp"
#include "sha256.hpp"
#include "socket_probes.hpp"
#include "sql/by_server.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"

namespace dblock {

namespace {

using std::chrono::milliseconds;

// A wait "forever" on MySQL: GET_LOCK takes no negative timeout on MariaDB (it answers NULL at
// once), so about 34 years.
constexpr double kForeverSeconds = 1073741824.0;

// How often MySQL 8.0 tries again during the sub-second rest of a wait (see SessionLockSql).
constexpr milliseconds kRestPoll{5};

// PostgreSQL's longest lock_timeout (INT_MAX ms, about 24.8 days): a longer finite wait is cut
// to it (and ends "not acquired" then); a wait past a century is sent as 0, forever.
constexpr milliseconds kMaxLockTimeout{2147483647};

// The session lock's statements for one server, rendered once.
struct Statements {
  detail::Statement try_lock, wait, release, unlock_all;
  bool fractional_wait;
};

// One session lock held for one owner, shared by that owner's reentrant leases, which may run
// statements on its connection from several threads (each lease renews on its own) and ask
// broken() from any thread.
struct Hold {
  explicit Hold(PooledConnection c)
      : conn(std::move(c)), fd(conn->native_socket()), dialect(conn->dialect()) {}

  PooledConnection conn;
  const int fd;  // conn's socket, read once: broken() asks it while a statement may run
  const Dialect dialect;
  Value lock;  // the bigint (PostgreSQL) or name (MySQL) the server knows the lock by
  std::string registry_key;
  std::int64_t fencing_token = 0;
  int count = 1;  // leases of this owner on this hold; guarded by the registry

  // The turn on conn: one statement, or one borrow (SessionConnection), at a time. While a
  // statement or a borrow has it, `statements` is odd. A thread that borrowed conn already has
  // the turn: its own statements (a release or renewal of the lease) run in the borrow's.
  class Turn {
   public:
    explicit Turn(Hold& hold) : hold_(hold), lock_(hold.statement_mu, std::defer_lock) {
      if (hold.borrowed_here()) return;
      lock_.lock();
      hold.statements.fetch_add(1);
    }
    ~Turn() {
      if (!lock_.owns_lock()) return;
      hold_.note_broken();
      hold_.statements.fetch_add(1);
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    Hold& hold_;
    std::unique_lock<std::mutex> lock_;
  };

  // Runs fn(Connection&) as the only statement on the connection, and notes whether the
  // connection broke.
  template <class Fn>
  auto run(Fn&& fn) {
    Turn turn(*this);
    return fn(*conn);
  }

  // A borrow (SessionConnection) takes the turn on this thread until end_borrow() on it.
  void begin_borrow() {
    statement_mu.lock();
    statements.fetch_add(1);
    borrower.store(std::this_thread::get_id());
  }
  void end_borrow() noexcept {
    borrower.store(std::thread::id());
    note_broken();
    statements.fetch_add(1);
    statement_mu.unlock();
  }
  bool borrowed_here() const noexcept { return borrower.load() == std::this_thread::get_id(); }

  // Set (in a borrow's turn) when the lease's last release ran on the borrowing thread: the
  // borrow's end sends the unlock.
  bool release_when_returned = false;

  // True once the session is gone (the connection broke, the server closed it, or sent the
  // message that ends it), noticed without a statement: the server frees the lock with it. The
  // connection is the hold's alone, so between its statements nothing else arrives on it. While
  // one of its statements runs (or when one started during the look), the bytes waiting may be
  // that statement's answer: then only a close counts, or on PostgreSQL the FATAL error that
  // comes before the server frees the session's locks; the statement itself finds a session
  // that ended. After detach(), true: the hold has no connection any more.
  bool broken() const noexcept {
    if (gone.load() || detached.load()) return true;
    const std::uint64_t before = statements.load();
    if (before % 2 == 1) return detail::peer_ended_session(fd, dialect);
    if (!detail::peer_spoke_or_closed(fd)) return false;
    return statements.load() == before || gone.load() || detached.load();
  }

  // Gives the connection back to its source (the last lease released the lock).
  void detach() noexcept {
    detached.store(true);
    conn.reset();
  }

 private:
  void note_broken() noexcept {
    if (conn && conn->broken()) gone.store(true);
  }

  std::mutex statement_mu;                   // the turn on conn
  std::atomic<std::thread::id> borrower;     // the thread of the borrow in progress, if any
  std::atomic<std::uint64_t> statements{0};  // odd while a statement or a borrow runs
  std::atomic<bool> gone{false};             // a statement left the connection broken
  std::atomic<bool> detached{false};         // conn went back to its source
};

}  // namespace

struct detail::SessionLockCore {
  SessionLockCore(ConnectionSource& src, SessionLockOptions opts)
      : source(src),
        options(std::move(opts)),
        dialect(src.dialect()),
        statements(dialect, [&](const detail::ServerSql& sql) {
          const detail::SessionLockSql& s = sql.session_lock;
          return Statements{detail::Statement(s.try_lock, dialect, options.tables),
                            detail::Statement(s.wait, dialect, options.tables),
                            detail::Statement(s.release, dialect, options.tables),
                            detail::Statement(s.unlock_all, dialect, options.tables),
                            s.fractional_wait};
        }) {
    if (!source.keeps_sessions()) {
      throw Error(ErrorCode::kFailedPrecondition,
                  "session locks need connections that keep their server session, and this "
                  "source is behind a transaction pooler (pool_mode=transaction, "
                  "PoolOptions::dedicated_sessions = false), which may run the unlock on another "
                  "session and leave the lock behind: use UniqueKeyLock there, or connect "
                  "SessionLock to the server directly or through a session-mode pooler");
    }
  }

  // What the server knows the key's lock by: SHA-256 over schema, prefix and key (identifiers
  // never hold the 0x1f separator, so the split is unambiguous). PostgreSQL: the first 64 bits
  // as a signed bigint. MySQL: "dblock_" and 160 bits in hex (47 characters of GET_LOCK's 64).
  Value lock_for(std::string_view key) const {
    std::string input = options.tables.schema();
    input += '\x1f';
    input += options.tables.prefix();
    input += '\x1f';
    input += key;
    const detail::Sha256Digest digest = detail::sha256(input);
    if (dialect == Dialect::kMySQL) {
      return Value("dblock_" + detail::hex(std::span(digest).first(20)));
    }
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = bits << 8 | digest[i];
    return Value(static_cast<long long>(static_cast<std::int64_t>(bits)));
  }

  // Throws unless session locks hold on this server: not on a Galera cluster.
  void check_server(Connection& conn) {
    galera.refuse_on_galera(
        conn,
        "session locks are node-local on a Galera cluster (GET_LOCK locks only the "
        "node it runs on, so clients on two nodes both get the lock): use "
        "UniqueKeyLock there");
  }

  ConnectionSource& source;
  SessionLockOptions options;
  Dialect dialect;
  detail::ByServer<Statements> statements;
  detail::GaleraCheck galera;
  detail::HoldRegistry<Hold> holds;  // by owner and key
};

namespace {

// Frees every session lock of `conn` (it held at most the one being acquired), so it goes back
// to the source holding nothing. A connection that broke has nothing left to free: the server
// ended its session.
void unlock_all_quietly(Connection& conn, const Statements& st) noexcept {
  try {
    if (!conn.broken()) conn.execute(st.unlock_all.sql());
  } catch (...) {
    // Broken now, or about to be found so; the source drops it.
  }
}

// The session holding the lock on `key` ended before the unlock was answered: the server freed
// the lock when it ended the session (or will, once it sees the connection closed).
Error session_lost(const std::string& key, std::string_view cause) {
  std::string message = "the session holding '" + key +
                        "' ended before the release: the server freed the lock with it, so "
                        "another owner may have held the key since; acquire again to redo "
                        "the work";
  if (!cause.empty()) message.append(" (").append(cause).append(")");
  return Error(ErrorCode::kLeaseLost, message);
}

// Unlocks `hold` (the last lease of it was released) and gives its connection back; run in the
// hold's turn.
ReleaseOutcome unlock_hold(detail::SessionLockCore& impl, Hold& hold, const std::string& key) {
  const Statements& st = impl.statements[hold.conn->server()];
  Connection& conn = *hold.conn;
  // A session the driver already knows is gone. One the server closed without the driver
  // noticing yet fails the unlock below with kConnectionLost (no poll of the socket first:
  // that would cost every release a system call).
  if (conn.broken()) {
    hold.detach();
    throw session_lost(key, {});
  }
  Result r;
  try {
    r = conn.execute(st.release.sql(), st.release.bind({{"lock", hold.lock}}));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kConnectionLost) unlock_all_quietly(conn, st);
    hold.detach();
    if (e.code() == ErrorCode::kConnectionLost) throw session_lost(key, e.what());
    throw;
  }
  hold.detach();
  return !r.empty() && r.at(0, "released") == "1" ? ReleaseOutcome::kReleased
                                                  : ReleaseOutcome::kNotHeld;
}

class SessionLease final : public detail::LeaseCore {
 public:
  SessionLease(std::shared_ptr<detail::SessionLockCore> impl, std::shared_ptr<Hold> hold,
               detail::LeaseInfo info)
      : LeaseCore(std::move(info), nullptr), impl_(std::move(impl)), hold_(std::move(hold)) {}

  bool expires() const noexcept override { return false; }  // held until the session ends

 protected:
  ReleaseOutcome do_release() override {
    if (!impl_->holds.leave(*hold_)) return ReleaseOutcome::kDecremented;
    // The last lease of the hold: no other lease runs statements on it any more.
    if (hold_->borrowed_here()) {
      // This thread borrowed the connection: the borrow's end unlocks (SessionConnection).
      hold_->release_when_returned = true;
      return ReleaseOutcome::kReleased;
    }
    Hold::Turn turn(*hold_);
    return unlock_hold(*impl_, *hold_, info().key);
  }

  bool do_renew(milliseconds) override {
    if (hold_->broken()) return false;
    // The connection is borrowed by this thread, perhaps in a failed transaction: no statement.
    if (hold_->borrowed_here()) return true;
    try {
      hold_->run([](Connection& c) { c.execute("SELECT 1"); });
      return true;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kConnectionLost) return false;
      throw;
    }
  }

  // A transaction on the lease's own connection (SessionConnection) commits only while the
  // session lives, and with it the lock: nothing to send. Any other is not protected.
  void fence(Connection& conn) override {
    if (hold_->conn.get() != &conn || !hold_->borrowed_here()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "a session lock on '" + info().key +
                      "' fences only a transaction on its own connection, borrowed on this "
                      "thread: run the transaction on dblock::SessionConnection(lease)");
    }
    if (hold_->broken()) throw detail::fence_lease_lost(info().key);
  }

  bool connection_lost() const noexcept override { return hold_->broken(); }
  LossReason why_not_held() noexcept override { return LossReason::kSessionEnded; }
  bool polled_for_loss() const noexcept override { return true; }  // broken(): any thread

 private:
  std::shared_ptr<detail::SessionLockCore> impl_;
  std::shared_ptr<Hold> hold_;
  friend class dblock::SessionConnection;
};

// The token in a lock statement's answer; nullopt when the lock was not taken.
std::optional<std::int64_t> token_of(const Result& r) {
  if (r.empty() || !r.at(0, "fencing_token")) return std::nullopt;
  const std::string& text = *r.at(0, "fencing_token");
  std::int64_t token = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), token);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "the server's fencing token " + text +
                    " does not fit a signed 64-bit integer: UUID_SHORT() starts with the "
                    "server_id, which must be below 128 for session locks");
  }
  return token;
}

// One lock statement on `conn`: a try, or a wait of up to `timeout` (milliseconds::max():
// forever). Throws the server's error (a PostgreSQL wait that ran out: kLockNotAvailable).
std::optional<std::int64_t> lock_once(Connection& conn, const Statements& st, const Value& lock,
                                      Dialect dialect, milliseconds timeout) {
  if (timeout == milliseconds(0)) {
    return token_of(conn.execute(st.try_lock.sql(), st.try_lock.bind({{"lock", lock}})));
  }
  const bool forever = timeout == milliseconds::max();
  Value bound;
  if (dialect == Dialect::kPostgreSQL) {
    bound = Value(forever ? std::string("0")
                          : std::to_string(std::min(timeout, kMaxLockTimeout).count()) + "ms");
  } else {
    bound = Value(forever ? kForeverSeconds : static_cast<double>(timeout.count()) / 1000.0);
  }
  return token_of(conn.execute(st.wait.sql(), st.wait.bind({{"lock", lock}, {"timeout", bound}})));
}

// Takes the lock on `conn`, waiting up to `timeout`; nullopt when another session holds it.
std::optional<std::int64_t> lock_on(Connection& conn, const Statements& st, const Value& lock,
                                    Dialect dialect, milliseconds timeout) {
  if (st.fractional_wait || timeout == milliseconds(0) || timeout == milliseconds::max()) {
    return lock_once(conn, st, lock, dialect, timeout);
  }
  // MySQL 8.0: GET_LOCK takes whole seconds (it reads its timeout as an integer, rounding a
  // fraction to the nearest second), so it is given the whole seconds of the wait, and the rest
  // is spent trying again.
  detail::Clock& clock = detail::Clock::system();
  const auto deadline = clock.now() + timeout;
  const milliseconds whole = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  if (whole.count() > 0) {
    if (auto token = lock_once(conn, st, lock, dialect, whole)) return token;
  }
  const auto rest =
      std::max(milliseconds(0), std::chrono::ceil<milliseconds>(deadline - clock.now()));
  Backoff every_poll({.initial = kRestPoll, .max_delay = kRestPoll, .min_sleep = kRestPoll});
  return detail::retry_until(
      clock, rest, false, every_poll,
      [&] { return lock_once(conn, st, lock, dialect, milliseconds(0)); },
      [&](milliseconds pause) { clock.sleep_for(pause); });
}

std::optional<Lease> lock_key(const std::shared_ptr<detail::SessionLockCore>& impl,
                              std::string_view key, milliseconds timeout,
                              const LockOptions& options) {
  validate_lock_key(key);
  detail::refuse_min_hold(options.min_hold, "session locks");
  detail::refuse_lock_delay(options.lock_delay, "session locks");
  detail::refuse_stop_rules(options.stop_margin.has_value(), static_cast<bool>(options.renew_if),
                            "session locks");
  detail::LeaseInfo info{std::string(key), 0, detail::random_lease_id(),
                         options.owner ? *options.owner : Owner::current_thread(), options.ttl};
  std::string registry_key = info.owner.to_string() + '\x1f' + std::string(key);
  if (auto hold = impl->holds.reenter(
          registry_key, [](const Hold& h) { return h.broken(); }, "session")) {
    info.fencing_token = hold->fencing_token;
    return Lease(std::make_shared<SessionLease>(impl, std::move(hold), std::move(info)));
  }
  PooledConnection conn = impl->source.acquire();
  impl->check_server(*conn);
  const Statements& st = impl->statements[conn->server()];
  Value lock = impl->lock_for(key);
  std::optional<std::int64_t> token;
  try {
    token = lock_on(*conn, st, lock, impl->dialect, timeout);
  } catch (const Error& e) {
    // Whatever the wait raced with (a grant as it timed out, a token that failed after the
    // grant), the connection goes back holding no lock.
    unlock_all_quietly(*conn, st);
    switch (e.code()) {
      case ErrorCode::kLockNotAvailable:  // PostgreSQL: lock_timeout ran out
      case ErrorCode::kLockWaitTimeout:
      case ErrorCode::kDeadlock:  // two waits that each hold what the other waits for
        return std::nullopt;
      default:
        throw;
    }
  }
  if (!token) return std::nullopt;  // not taken: the session holds nothing
  info.fencing_token = *token;
  auto hold = std::make_shared<Hold>(std::move(conn));
  hold->lock = std::move(lock);
  hold->registry_key = std::move(registry_key);
  hold->fencing_token = *token;
  impl->holds.remember(hold);
  return Lease(std::make_shared<SessionLease>(impl, std::move(hold), std::move(info)));
}

}  // namespace

SessionLock::SessionLock(ConnectionSource& source, SessionLockOptions options)
    : impl_(std::make_shared<detail::SessionLockCore>(source, std::move(options))) {}

SessionLock::~SessionLock() = default;

std::optional<Lease> SessionLock::try_acquire(std::string_view key, const LockOptions& options) {
  return detail::observed_acquire("session", key, options, std::nullopt,
                                  [&] { return lock_key(impl_, key, milliseconds(0), options); });
}

std::optional<Lease> SessionLock::acquire(std::string_view key, milliseconds timeout,
                                          const LockOptions& options) {
  const bool forever = detail::is_forever_wait(timeout);
  return detail::observed_acquire("session", key, options, timeout, [&] {
    return lock_key(impl_, key, forever ? milliseconds::max() : timeout, options);
  });
}

struct SessionConnection::Impl {
  std::shared_ptr<detail::SessionLockCore> lock;
  std::shared_ptr<Hold> hold;
  std::string key;
};

SessionConnection::SessionConnection(const Lease& lease) {
  auto* session = dynamic_cast<SessionLease*>(detail::LeaseAccess::core(lease));
  if (session == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "SessionConnection needs a held lease of a SessionLock; this one is empty or of "
                "another lock kind (fence() a unique-key lease on any connection instead)");
  }
  const std::shared_ptr<Hold>& hold = session->hold_;
  if (hold->borrowed_here()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "the connection of the session lock on '" + lease.key() +
                    "' is borrowed on this thread already: use that SessionConnection");
  }
  hold->begin_borrow();  // waits for a statement of the hold in flight
  if (session->released() || session->lost()) {
    hold->end_borrow();
    throw Error(ErrorCode::kLeaseLost, "the session holding '" + lease.key() +
                                           "' ended (or the lease was released): the server "
                                           "freed the lock with it; acquire again");
  }
  impl_ = std::make_unique<Impl>(Impl{session->impl_, hold, lease.key()});
}

SessionConnection::~SessionConnection() {
  Hold& hold = *impl_->hold;
  if (hold.conn && hold.conn->in_transaction()) hold.conn->rollback();
  if (hold.release_when_returned && hold.conn) {
    try {
      unlock_hold(*impl_->lock, hold, impl_->key);
    } catch (...) {
      // The session ended (its lock with it), or the unlock failed and unlock_hold freed every
      // lock of the session.
    }
  }
  hold.end_borrow();
}

Connection& SessionConnection::operator*() const noexcept { return *impl_->hold->conn; }

Connection* SessionConnection::operator->() const noexcept { return impl_->hold->conn.get(); }

}  // namespace dblock
