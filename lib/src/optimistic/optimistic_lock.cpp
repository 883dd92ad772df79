// SPDX-License-Identifier: Apache-2.0
#include "dblock/optimistic_lock.hpp"

#include "dblock/error.hpp"
#include "isolation.hpp"
#include "lease_core.hpp"
#include "observed_acquire.hpp"
#include "sql/by_server.hpp"
#include "sql/server_sql.hpp"
#include "sql/statement.hpp"
#include "strategy_rules.hpp"
#include "transaction_hold.hpp"

namespace dblock {

struct detail::OptimisticLockCore {
  // The lock's statements for one server.
  struct Statements {
    detail::Statement read, create, cas;
  };

  OptimisticLockCore(ConnectionSource& src, OptimisticLockOptions opts)
      : source(src),
        options(std::move(opts)),
        dialect(src.dialect()),
        statements(dialect, [&](const detail::ServerSql& server) {
          const detail::VersionSql& sql = server.versions;
          return Statements{detail::Statement(sql.read, dialect, options.tables),
                            detail::Statement(sql.create, dialect, options.tables),
                            detail::Statement(sql.cas, dialect, options.tables)};
        }) {}

  // Opens the lease's transaction. On MySQL/MariaDB at REPEATABLE READ when the session's
  // default is SERIALIZABLE, where the version read would take a shared lock and two writers of
  // a key would wait on each other for innodb_lock_wait_timeout instead of one getting a quick
  // conflict (isolation.hpp). PostgreSQL's stricter levels only turn a lost race into a
  // serialization failure, which is a conflict here too.
  void begin(Connection& conn) {
    if (dialect == Dialect::kMySQL) {
      isolation.begin(conn, detail::Isolation::kRepeatableRead, detail::Isolation::kSerializable);
    } else {
      conn.begin();
    }
  }

  ConnectionSource& source;
  OptimisticLockOptions options;
  Dialect dialect;
  detail::ByServer<Statements> statements;
  detail::SessionIsolation isolation;
};

namespace {

class OptimisticLease final : public detail::LeaseCore {
 public:
  OptimisticLease(std::shared_ptr<detail::OptimisticLockCore> impl, PooledConnection conn,
                  detail::LeaseInfo info)
      : LeaseCore(std::move(info), nullptr),
        impl_(std::move(impl)),
        tx_(std::move(conn), LeaseCore::info().key) {}

  Connection* connection() override { return &tx_.connection(); }
  bool expires() const noexcept override { return false; }  // held until the transaction ends

 protected:
  ReleaseOutcome do_release() override {
    const auto& i = info();
    if (tx_.broken()) tx_.commit();  // throws the "lost before the release" error
    const auto& cas = impl_->statements[tx_.connection().server()].cas;
    try {
      Result r = tx_.connection().execute(
          cas.sql(), cas.bind({{"key", Value(i.key)}, {"version", Value(i.fencing_token)}}));
      if (r.affected_rows() != 1) {
        tx_.rollback();
        return ReleaseOutcome::kConflict;
      }
    } catch (const Error& e) {
      tx_.rollback();
      // Another writer's commit got in the way (PostgreSQL under REPEATABLE READ, InnoDB).
      if (detail::is_conflict_error(e)) return ReleaseOutcome::kConflict;
      // No COMMIT went out: the transaction dies with the connection.
      if (e.code() == ErrorCode::kConnectionLost) throw tx_.lost_before_commit(e.what());
      throw;
    }
    try {
      tx_.commit();
    } catch (const Error& e) {
      // A multi-primary cluster (Galera) certifies at COMMIT: the loser's transaction is rolled
      // back with 1213 / 40001, the same verdict as a version that moved.
      if (detail::is_conflict_error(e)) return ReleaseOutcome::kConflict;
      throw;
    }
    return ReleaseOutcome::kReleased;
  }

  void do_abandon() noexcept override { tx_.rollback(); }

  bool do_renew(std::chrono::milliseconds) override { return tx_.alive(); }

  bool connection_lost() const noexcept override { return tx_.ended(); }
  LossReason why_not_held() noexcept override { return LossReason::kSessionEnded; }

 private:
  std::shared_ptr<detail::OptimisticLockCore> impl_;
  detail::TransactionHold tx_;
};

}  // namespace

OptimisticLock::OptimisticLock(ConnectionSource& source, OptimisticLockOptions options)
    : impl_(std::make_shared<detail::OptimisticLockCore>(source, std::move(options))) {
  if (impl_->options.retry.max_attempts < 1) {
    throw Error(ErrorCode::kInvalidArgument, "retry.max_attempts must be at least 1");
  }
}

OptimisticLock::~OptimisticLock() = default;

RetryPolicy OptimisticLock::retry_policy() const { return impl_->options.retry; }

std::optional<Lease> OptimisticLock::try_acquire(std::string_view key, const LockOptions& options) {
  return detail::observed_acquire(
      "optimistic", key, options, std::nullopt, [&]() -> std::optional<Lease> {
        validate_lock_key(key);
        detail::refuse_min_hold(options.min_hold, "optimistic locks");
        detail::refuse_lock_delay(options.lock_delay, "optimistic locks");
        detail::refuse_stop_rules(options.stop_margin.has_value(),
                                  static_cast<bool>(options.renew_if), "optimistic locks");
        detail::LeaseInfo info{std::string(key), 0, detail::random_lease_id(),
                               options.owner ? *options.owner : Owner::current_thread(),
                               options.ttl};
        PooledConnection conn = impl_->source.acquire();
        const auto& statements = impl_->statements[conn->server()];
        const auto params = statements.read.bind({{"key", Value(info.key)}});
        for (int attempt = 0;; ++attempt) {
          impl_->begin(*conn);
          try {
            // Read inside the transaction: on InnoDB (REPEATABLE READ) this read also fixes the
            // snapshot the critical section reads from.
            Result r = conn->execute(statements.read.sql(), params);
            if (!r.empty()) {
              info.fencing_token = r.int64_at(0, "version");
              return Lease(
                  std::make_shared<OptimisticLease>(impl_, std::move(conn), std::move(info)));
            }
          } catch (...) {
            conn->rollback();
            throw;
          }
          // First use of the key (or the cleaner deleted its row): create it outside the
          // transaction.
          conn->rollback();
          if (attempt >= 3) {
            throw Error(ErrorCode::kOther, "the version row for '" + info.key +
                                               "' keeps disappearing; is something deleting it?");
          }
          try {
            conn->execute(statements.create.sql(),
                          statements.create.bind({{"key", Value(info.key)}}));
          } catch (const Error& e) {
            // Idempotent: on Galera two nodes creating the row at once fail certification (1213);
            // the next attempt reads the row the winner created.
            if (!detail::is_conflict_error(e)) throw;
          }
        }
      });
}

std::optional<Lease> OptimisticLock::acquire(std::string_view key,
                                             std::chrono::milliseconds timeout,
                                             const LockOptions& options) {
  detail::is_forever_wait(timeout);  // validates; the strategy never waits
  return try_acquire(key, options);  // observed as the try it is
}

}  // namespace dblock
