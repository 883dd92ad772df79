// SPDX-License-Identifier: Apache-2.0
/// @file
/// Where dblock gets connections from: one borrowed connection, a caller's pool, or a small
/// built-in pool.
///
/// acquire() hands out a PooledConnection, an RAII handle that gives the connection back when it
/// is destroyed. A connection that broke while handed out (Connection::broken()) is not reused.
///
/// Thread-safety: every ConnectionSource is safe to use from many threads. A PooledConnection is
/// used by one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"

namespace dblock {

class ConnectionSource;

/// A connection on loan from a ConnectionSource. Move-only; gives the connection back on
/// destruction (never throws).
class DBLOCK_EXPORT PooledConnection {
 public:
  PooledConnection() = default;
  PooledConnection(ConnectionSource* source, Connection* conn) : source_(source), conn_(conn) {}
  PooledConnection(PooledConnection&& other) noexcept;
  PooledConnection& operator=(PooledConnection&& other) noexcept;
  ~PooledConnection();

  Connection& operator*() const noexcept { return *conn_; }
  Connection* operator->() const noexcept { return conn_; }
  Connection* get() const noexcept { return conn_; }
  explicit operator bool() const noexcept { return conn_ != nullptr; }

  /// Gives the connection back now; the handle becomes empty.
  void reset() noexcept;

 private:
  ConnectionSource* source_ = nullptr;
  Connection* conn_ = nullptr;
};

class DBLOCK_EXPORT ConnectionSource {
 public:
  virtual ~ConnectionSource() = default;

  virtual Dialect dialect() const noexcept = 0;

  /// Blocks until a connection is free (opening one if the source may), then lends it.
  /// Throws Error(kConnectFailed / kAccessDenied / ...) when no connection can be opened.
  virtual PooledConnection acquire() = 0;

  /// Safe to print: where the connections point (never a password).
  virtual std::string describe() const = 0;

  /// A new connection outside the source's sharing, for a session that must stay open for a long
  /// time (a LISTEN session waiting for notifications). nullptr when the source cannot open
  /// connections (a borrowed connection, a caller's pool); callers then poll instead.
  virtual std::unique_ptr<Connection> open_dedicated() { return nullptr; }

  /// Whether a lent connection keeps one server session from one statement to the next, so that
  /// session state (a session lock, a LISTEN) stays with it. false behind a transaction pooler
  /// (PgBouncer in transaction mode), which may run each transaction on another server session.
  virtual bool keeps_sessions() const noexcept { return true; }

 protected:
  friend class PooledConnection;
  /// Called by PooledConnection with the connection it held. Must not throw.
  virtual void give_back(Connection* conn) noexcept = 0;
};

/// A source over one connection the caller owns and keeps alive for the source's lifetime.
/// Callers take turns: acquire() blocks while another thread holds the connection.
/// If the connection breaks, later acquire()s throw Error(kConnectionLost): the owner must
/// reconnect (dblock cannot reopen a connection it did not open).
DBLOCK_EXPORT std::unique_ptr<ConnectionSource> borrow(Connection& conn);

/// A source over one connection dblock owns.
DBLOCK_EXPORT std::unique_ptr<ConnectionSource> single(std::unique_ptr<Connection> conn);

/// Opens a new connection; used by Pool.
using ConnectionFactory = std::function<std::unique_ptr<Connection>()>;

struct PoolOptions {
  /// Most connections open at once. Must be at least 1.
  std::size_t max_size = 4;
  /// How long acquire() waits for a free connection before throwing Error(kPoolExhausted).
  std::chrono::milliseconds acquire_timeout = std::chrono::seconds(30);
  /// Whether open_dedicated() may open session-long connections. false behind a transaction
  /// pooler (PgBouncer in transaction mode), where a session's state such as LISTEN does not stay
  /// with the client: waiters then poll.
  bool dedicated_sessions = true;
};

/// A small built-in pool: opens connections lazily up to max_size, reuses idle ones, and drops
/// broken ones. A connection that comes back broken takes the idle ones with it (whatever broke
/// it, a server restart or a network cut, has most likely broken them too), so the next
/// acquire() opens a fresh connection instead of lending another dead one. A thread gets back
/// the connection it used last when that one is idle (else the one returned last), so under load
/// each thread keeps talking to the same server session.
class DBLOCK_EXPORT Pool final : public ConnectionSource {
 public:
  Pool(Dialect dialect, ConnectionFactory factory, PoolOptions options = {});
  ~Pool() override;

  Dialect dialect() const noexcept override { return dialect_; }
  PooledConnection acquire() override;
  std::string describe() const override;
  std::unique_ptr<Connection> open_dedicated() override {
    return options_.dedicated_sessions ? factory_() : nullptr;
  }
  bool keeps_sessions() const noexcept override { return options_.dedicated_sessions; }

  /// Connections currently open (idle + lent).
  std::size_t open_count() const;

 protected:
  void give_back(Connection* conn) noexcept override;

 private:
  Dialect dialect_;
  ConnectionFactory factory_;
  PoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<std::unique_ptr<Connection>> lent_;
  std::size_t opening_ = 0;  // factory calls in progress
  std::string description_;  // from the first connection opened
};

}  // namespace dblock
