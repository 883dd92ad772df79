// SPDX-License-Identifier: Apache-2.0
#include "dblock/session_lock.hpp"

#include <atomic>
#include <charconv>
#include <cstdint>
#include <mutex>
#include <string>

#include "dblock/error.hpp"
#include "galera.hpp"
#include "hold_registry.hpp"
#include "lease_core.hpp"
#include "retry_until.hpp"
#include "sha256.hpp"
#include "socket_probes.hpp"
#include "sql/by_server.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"

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

  // Runs fn(Connection&) as the only statement on the connection, and notes whether the
  // connection broke.
  template <class Fn>
  auto run(Fn&& fn) {
    std::lock_guard lock_statements(statement_mu);
    struct Running {
      Hold& hold;
      explicit Running(Hold& h) : hold(h) { hold.statements.fetch_add(1); }
      ~Running() {
        if (hold.conn->broken()) hold.gone.store(true);
        hold.statements.fetch_add(1);
      }
    } running(*this);
    return fn(*conn);
  }

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
  std::mutex statement_mu;                   // one statement at a time on conn
  std::atomic<std::uint64_t> statements{0};  // odd while a statement runs
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
    const Statements& st = impl_->statements[hold_->conn->server()];
    Connection& conn = *hold_->conn;
    // A session the driver already knows is gone. One the server closed without the driver
    // noticing yet fails the unlock below with kConnectionLost (no poll of the socket first:
    // that would cost every release a system call).
    if (conn.broken()) {
      hold_->detach();
      throw lost({});
    }
    Result r;
    try {
      r = hold_->run([&](Connection& c) {
        return c.execute(st.release.sql(), st.release.bind({{"lock", hold_->lock}}));
      });
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kConnectionLost) {
        hold_->run([&](Connection& c) { unlock_all_quietly(c, st); });
      }
      hold_->detach();
      if (e.code() == ErrorCode::kConnectionLost) throw lost(e.what());
      throw;
    }
    hold_->detach();
    return !r.empty() && r.at(0, "released") == "1" ? ReleaseOutcome::kReleased
                                                    : ReleaseOutcome::kNotHeld;
  }

  bool do_renew(milliseconds) override {
    if (hold_->broken()) return false;
    try {
      hold_->run([](Connection& c) { c.execute("SELECT 1"); });
      return true;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kConnectionLost) return false;
      throw;
    }
  }

  bool connection_lost() const noexcept override { return hold_->broken(); }

 private:
  // The session holding the lock ended before the unlock was answered: the server freed the
  // lock when it ended the session (or will, once it sees the connection closed).
  Error lost(std::string_view cause) const {
    std::string message = "the session holding '" + info().key +
                          "' ended before the release: the server freed the lock with it, so "
                          "another owner may have held the key since; acquire again to redo "
                          "the work";
    if (!cause.empty()) message.append(" (").append(cause).append(")");
    return Error(ErrorCode::kLeaseLost, message);
  }

  std::shared_ptr<detail::SessionLockCore> impl_;
  std::shared_ptr<Hold> hold_;
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
  return lock_key(impl_, key, milliseconds(0), options);
}

std::optional<Lease> SessionLock::acquire(std::string_view key, milliseconds timeout,
                                          const LockOptions& options) {
  const bool forever = detail::is_forever_wait(timeout);
  return lock_key(impl_, key, forever ? milliseconds::max() : timeout, options);
}

}  // namespace dblock
