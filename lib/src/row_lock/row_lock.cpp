// SPDX-License-Identifier: Apache-2.0
#include "dblock/row_lock.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <span>
#include <unordered_set>

#include "caller_tables.hpp"
#include "dblock/error.hpp"
#include "galera.hpp"
#include "hold_registry.hpp"
#include "isolation.hpp"
#include "lease_core.hpp"
#include "observed_acquire.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"
#include "transaction_hold.hpp"

namespace dblock {

namespace {

using std::chrono::milliseconds;

// InnoDB's largest lock wait timeout (about 34 years).
constexpr long long kMaxInnodbWaitSeconds = 1073741824;

// How long creating a key's row may wait for another transaction that wrote the same key.
constexpr milliseconds kCreateWait{50};

// One transaction holding one key for one owner, shared by that owner's reentrant leases.
struct Hold {
  Hold(PooledConnection conn, std::string key) : tx(std::move(conn), std::move(key)) {}
  detail::TransactionHold tx;
  std::string registry_key;
  std::int64_t fencing_token = 0;
  int count = 1;               // leases of this owner on this transaction; guarded by the registry
  bool rollback_only = false;  // an inner lease was dropped without release(); likewise
};

// How the statement for one lock attempt waits.
struct Wait {
  bool nowait = true;
  milliseconds timeout{0};  // when !nowait; milliseconds::max() for forever
};

std::string format_seconds(milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ms.count() / 1000),
                static_cast<long long>(ms.count() % 1000));
  return buf;
}

}  // namespace

struct detail::RowLockCore {
  RowLockCore(ConnectionSource& src, RowLockOptions opts)
      : source(src), options(std::move(opts)), dialect(src.dialect()) {}

  // The row lock's statements for the server of `conn` (MariaDB bounds its waits in the
  // statement, MySQL 8.0 through the session).
  static const detail::RowLockSql& sql(const Connection& conn) {
    return detail::server_sql(conn.server()).row_lock;
  }

  detail::Statement statement(std::string_view templ) const {
    return detail::Statement(templ, dialect, options.tables);
  }

  // The lock statement for `wait`, numbers filled in: `try_templ` for a try, else `wait_templ`.
  detail::Statement wait_statement(const Wait& wait, std::string_view try_templ,
                                   std::string_view wait_templ, const std::string& target = {},
                                   const std::string& column = {}) {
    std::string templ(wait.nowait ? try_templ : wait_templ);
    if (!wait.nowait && dialect == Dialect::kMySQL) {
      const bool forever = wait.timeout == milliseconds::max();
      const long long secs =
          forever ? kMaxInnodbWaitSeconds
                  : std::min<long long>(kMaxInnodbWaitSeconds, (wait.timeout.count() + 999) / 1000);
      templ = detail::replace_all(std::move(templ), "{{seconds}}", std::to_string(secs));
      templ = detail::replace_all(std::move(templ), "{{max_seconds}}",
                                  forever ? "0" : format_seconds(wait.timeout));
      templ = detail::replace_all(std::move(templ), "{{ms}}",
                                  forever ? "0" : std::to_string(wait.timeout.count()));
    }
    templ = detail::replace_all(std::move(templ), "{{target}}", target);
    templ = detail::replace_all(std::move(templ), "{{column}}", column);
    return statement(templ);
  }

  // PostgreSQL: bounds the next statement's lock wait, for this transaction only. MySQL 8.0:
  // sets the session's innodb_lock_wait_timeout (see RowLockSql::session_wait). Returns what
  // restore_timeout needs to put the setting back (the critical section's own statements must
  // not inherit the wait's bound): the replaced value on PostgreSQL, "" on MySQL 8.0; nullopt
  // when nothing was set.
  std::optional<std::string> set_timeout(Connection& conn, const Wait& wait) {
    if (wait.nowait) return std::nullopt;
    if (session_wait(conn)) {
      const long long secs = wait.timeout == milliseconds::max()
                                 ? kMaxInnodbWaitSeconds
                                 : std::clamp<long long>((wait.timeout.count() + 999) / 1000, 1,
                                                         kMaxInnodbWaitSeconds);
      conn.execute(detail::replace_all(std::string(sql(conn).session_wait), "{{seconds}}",
                                       std::to_string(secs)));
      return std::string();
    }
    if (sql(conn).set_timeout.empty()) return std::nullopt;
    const std::string value =
        wait.timeout == milliseconds::max() ? "0" : std::to_string(wait.timeout.count()) + "ms";
    const detail::Statement set = statement(sql(conn).set_timeout);
    return conn.execute(set.sql(), set.bind({{"timeout", Value(value)}}))
        .at(0, "previous")
        .value_or("0");
  }

  void restore_timeout(Connection& conn, const std::optional<std::string>& previous) {
    if (!previous) return;
    if (session_wait(conn)) {
      conn.execute(sql(conn).session_wait_reset);
      return;
    }
    const detail::Statement set = statement(sql(conn).set_timeout);
    conn.execute(set.sql(), set.bind({{"timeout", Value(*previous)}}));
  }

  // Opens the lease's transaction. On PostgreSQL at READ COMMITTED whatever the session's
  // default: under REPEATABLE READ or SERIALIZABLE a lock granted after a wait, or a stamp next
  // to another key's, fails with a serialization error (isolation.hpp). The critical section
  // runs at READ COMMITTED there too; the row lock is what serialises it.
  void begin(Connection& conn) {
    if (dialect == Dialect::kPostgreSQL) {
      isolation.begin(conn, detail::Isolation::kReadCommitted, detail::Isolation::kRepeatableRead,
                      detail::Isolation::kSerializable);
    } else {
      conn.begin();
    }
  }

  // MySQL 8.0, whose lock waits are bounded through the session (RowLockSql::session_wait).
  static bool session_wait(const Connection& conn) { return !sql(conn).session_wait.empty(); }

  // Throws unless row locks hold on this server: not on a multi-writer Galera cluster.
  void check_server(Connection& conn) {
    if (options.galera_single_writer) return;
    galera.refuse_on_galera(
        conn,
        "row locks are node-local on a Galera cluster (SELECT ... FOR UPDATE locks only "
        "the node it runs on, so clients on two nodes both get the lock): use "
        "UniqueKeyLock or OptimisticLock there, or, if every row-lock client writes "
        "through one node, say so with RowLockOptions::galera_single_writer");
  }

  // Makes the key's row exist (outside any transaction), unless it is known to.
  void ensure_row(Connection& conn, const std::string& key) {
    {
      std::lock_guard lock(mu);
      if (known_rows.count(key) != 0) return;
    }
    bool exists = false;
    if (!sql(conn).exists.empty()) {
      const detail::Statement find = statement(sql(conn).exists);
      exists = !conn.execute(find.sql(), find.bind({{"key", Value(key)}})).empty();
    }
    if (!exists) create_row(conn, key);
    std::lock_guard lock(mu);
    if (known_rows.size() >= 100000) known_rows.clear();  // bounded memory; rows are re-checked
    known_rows.insert(key);
  }

  // Creates the key's row. The create waits only when another transaction wrote the same key
  // meanwhile: other creators (InnoDB may call that a deadlock), or a holder that created,
  // locked and stamped it, which would keep a NOWAIT try waiting until the holder commits. The
  // wait is bounded (PostgreSQL: kCreateWait; MySQL: one second, in the statement), and then
  // the row exists or is about to: the lock statement decides, and a row still missing is made
  // again by lock_target's retry.
  void create_row(Connection& conn, const std::string& key) {
    const bool pg_timeout = !sql(conn).set_timeout.empty();
    const bool session = session_wait(conn);
    if (pg_timeout) begin(conn);
    try {
      if (pg_timeout || session) set_timeout(conn, Wait{false, kCreateWait});
      const detail::Statement create = statement(sql(conn).create);
      conn.execute(create.sql(), create.bind({{"key", Value(key)}}));
      if (pg_timeout) conn.commit();
      if (session) restore_timeout(conn, std::string());
    } catch (const Error& e) {
      if (pg_timeout) conn.rollback();
      if (session) reset_quietly(conn);
      switch (e.code()) {
        case ErrorCode::kLockNotAvailable:
        case ErrorCode::kLockWaitTimeout:
        case ErrorCode::kDeadlock:
        case ErrorCode::kSerializationFailure:
          return;
        default:
          throw;
      }
    }
  }

  // After a failed bounded wait on MySQL 8.0: the session setting outlives the rollback.
  void reset_quietly(Connection& conn) noexcept {
    try {
      if (!conn.broken() && session_wait(conn)) conn.execute(sql(conn).session_wait_reset);
    } catch (...) {
      // The connection is broken or about to be found so; a pool drops it.
    }
  }

  void forget_row(const std::string& key) {
    std::lock_guard lock(mu);
    known_rows.erase(key);
  }

  ConnectionSource& source;
  RowLockOptions options;
  Dialect dialect;
  detail::GaleraCheck galera;
  detail::SessionIsolation isolation;
  std::mutex mu;
  std::unordered_set<std::string> known_rows;
  detail::HoldRegistry<Hold> holds;  // by key and owner
};

namespace {

class RowLease final : public detail::LeaseCore {
 public:
  RowLease(std::shared_ptr<detail::RowLockCore> impl, std::shared_ptr<Hold> hold,
           detail::LeaseInfo info)
      : LeaseCore(std::move(info), nullptr), impl_(std::move(impl)), hold_(std::move(hold)) {}

  Connection* connection() override { return &hold_->tx.connection(); }
  bool expires() const noexcept override { return false; }  // held until the transaction ends

 protected:
  ReleaseOutcome do_release() override {
    if (!impl_->holds.leave(*hold_)) return ReleaseOutcome::kDecremented;
    if (hold_->rollback_only) {
      hold_->tx.rollback();
      throw Error(ErrorCode::kFailedPrecondition,
                  "an inner lease of '" + info().key +
                      "' was dropped without release(), so the transaction was rolled back "
                      "and nothing of the critical section was committed");
    }
    hold_->tx.commit();
    return ReleaseOutcome::kReleased;
  }

  void do_abandon() noexcept override {
    if (impl_->holds.leave(*hold_, [](Hold& h) { h.rollback_only = true; })) hold_->tx.rollback();
  }

  bool do_renew(std::chrono::milliseconds) override { return hold_->tx.alive(); }

  bool connection_lost() const noexcept override { return hold_->tx.ended(); }
  LossReason why_not_held() noexcept override { return LossReason::kSessionEnded; }

 private:
  std::shared_ptr<detail::RowLockCore> impl_;
  std::shared_ptr<Hold> hold_;
};

bool is_busy(ErrorCode code) {
  return code == ErrorCode::kLockNotAvailable || code == ErrorCode::kLockWaitTimeout;
}

bool is_contention(ErrorCode code) {
  return code == ErrorCode::kDeadlock || code == ErrorCode::kSerializationFailure;
}

Wait wait_for(milliseconds timeout) {
  const bool forever = detail::is_forever_wait(timeout);
  if (timeout == milliseconds(0)) return {};
  return {false, forever ? milliseconds::max() : timeout};
}

}  // namespace

RowLock::RowLock(ConnectionSource& source, RowLockOptions options)
    : impl_(std::make_shared<detail::RowLockCore>(source, std::move(options))) {}

RowLock::~RowLock() = default;

namespace {

// What one acquisition locks: the key's row in row_locks, or a row of the caller's table.
struct Target {
  std::string display_key;   // the lease's key()
  std::string registry_key;  // reentrancy: what and for whom
  bool own_table = false;
  std::string table, column;  // quoted, for own_table
  std::string display_table;  // as the caller named it
  Value row_key;
};

std::optional<Lease> lock_target(const std::shared_ptr<detail::RowLockCore>& impl, Target target,
                                 const Wait& wait, const LockOptions& options) {
  detail::refuse_min_hold(options.min_hold, "row locks");
  detail::refuse_lock_delay(options.lock_delay, "row locks");
  detail::refuse_stop_rules(options.stop_margin.has_value(), static_cast<bool>(options.renew_if),
                            "row locks");
  detail::LeaseInfo info{target.display_key, 0, detail::random_lease_id(),
                         options.owner ? *options.owner : Owner::current_thread(), options.ttl};
  target.registry_key += '\x1f' + info.owner.to_string();
  if (auto hold = impl->holds.reenter(
          target.registry_key, [](const Hold& h) { return h.tx.broken(); }, "transaction")) {
    info.fencing_token = hold->fencing_token;
    return Lease(std::make_shared<RowLease>(impl, std::move(hold), std::move(info)));
  }
  PooledConnection conn = impl->source.acquire();
  const detail::RowLockSql& sql = detail::RowLockCore::sql(*conn);
  impl->check_server(*conn);
  for (int attempt = 0;; ++attempt) {
    if (!target.own_table) impl->ensure_row(*conn, target.display_key);
    impl->begin(*conn);
    std::optional<std::string> previous_timeout;
    try {
      previous_timeout = impl->set_timeout(*conn, wait);
      std::optional<std::int64_t> token;
      if (target.own_table) {
        const detail::Statement lock = impl->wait_statement(wait, sql.target_try, sql.target_wait,
                                                            target.table, target.column);
        if (conn->execute(lock.sql(), lock.bind({{"row_key", target.row_key}})).empty()) {
          conn->rollback();
          throw Error(ErrorCode::kFailedPrecondition,
                      "no row with " + target.display_key +
                          ": a row lock on your own table needs an existing row; insert it "
                          "first or lock a key of dblock's row lock table instead");
        }
        token = 0;
      } else {
        const detail::Statement lock = impl->wait_statement(wait, sql.try_lock, sql.wait);
        const Owner& o = info.owner;
        const std::initializer_list<detail::Arg> holder = {{"key", Value(target.display_key)},
                                                           {"host", Value(o.host)},
                                                           {"process", Value(o.process)},
                                                           {"thread", Value(o.thread)}};
        Result r = conn->execute(lock.sql(), lock.bind(holder));
        if (!r.empty()) {
          if (sql.stamp.empty()) {
            token = r.int64_at(0, "fencing_token");  // PostgreSQL: locked and stamped at once
          } else {
            const detail::Statement stamp = impl->statement(sql.stamp);
            token = static_cast<std::int64_t>(
                conn->execute(stamp.sql(), stamp.bind(holder)).last_insert_id());
          }
        }
      }
      if (!token) {
        // The key's row is gone (the cleaner deleted it after we looked): make it again.
        conn->rollback();
        impl->forget_row(target.display_key);
        if (attempt >= 3) {
          throw Error(ErrorCode::kOther, "the row lock row for '" + target.display_key +
                                             "' keeps disappearing; is something deleting it?");
        }
        continue;
      }
      impl->restore_timeout(*conn, previous_timeout);
      info.fencing_token = *token;
      auto hold = std::make_shared<Hold>(std::move(conn), target.display_key);
      hold->registry_key = target.registry_key;
      hold->fencing_token = *token;
      impl->holds.remember(hold);
      return Lease(std::make_shared<RowLease>(impl, std::move(hold), std::move(info)));
    } catch (const Error& e) {
      // Whatever the wait raced with, the rollback leaves this attempt holding nothing.
      conn->rollback();
      if (previous_timeout) impl->reset_quietly(*conn);
      if (is_busy(e.code())) return std::nullopt;
      if (is_contention(e.code()) && attempt < impl->options.contention_retries) continue;
      if (target.own_table)
        detail::rethrow_for_caller_table(e, target.display_table, "try_acquire_row");
      throw;
    }
  }
}

Target key_target(std::string_view key) {
  validate_lock_key(key);
  return {std::string(key), "key\x1f" + std::string(key), false, {}, {}, {}, {}};
}

Target row_target(Dialect dialect, const TableRow& row) {
  if (row.key.is_null()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the row's key value is NULL; pass the primary key of an existing row");
  }
  Target t;
  t.own_table = true;
  t.table = quote_table_name(dialect, row.table);
  t.display_table = row.table;
  t.column = quote_identifier(dialect, row.key_column);
  t.row_key = row.key;
  t.display_key = row.table + "." + row.key_column + "=" + row.key.to_text().value_or("");
  t.registry_key = "row\x1f" + t.display_key;
  return t;
}

}  // namespace

std::optional<Lease> RowLock::try_acquire(std::string_view key, const LockOptions& options) {
  return detail::observed_acquire("row", key, options, std::nullopt, [&] {
    return lock_target(impl_, key_target(key), Wait{}, options);
  });
}

std::optional<Lease> RowLock::acquire(std::string_view key, std::chrono::milliseconds timeout,
                                      const LockOptions& options) {
  return detail::observed_acquire("row", key, options, timeout, [&] {
    return lock_target(impl_, key_target(key), wait_for(timeout), options);
  });
}

std::optional<Lease> RowLock::try_acquire_row(const TableRow& row, const LockOptions& options) {
  Target target = row_target(impl_->dialect, row);
  const std::string key = target.display_key;
  return detail::observed_acquire("row", key, options, std::nullopt, [&] {
    return lock_target(impl_, std::move(target), Wait{}, options);
  });
}

std::optional<Lease> RowLock::acquire_row(const TableRow& row, std::chrono::milliseconds timeout,
                                          const LockOptions& options) {
  Target target = row_target(impl_->dialect, row);
  const std::string key = target.display_key;
  return detail::observed_acquire("row", key, options, timeout, [&] {
    return lock_target(impl_, std::move(target), wait_for(timeout), options);
  });
}

}  // namespace dblock
