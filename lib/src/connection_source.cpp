// SPDX-License-Identifier: Apache-2.0
#include "dblock/connection_source.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "observe.hpp"

namespace dblock {

PooledConnection::PooledConnection(PooledConnection&& other) noexcept
    : source_(std::exchange(other.source_, nullptr)), conn_(std::exchange(other.conn_, nullptr)) {}

PooledConnection& PooledConnection::operator=(PooledConnection&& other) noexcept {
  if (this != &other) {
    reset();
    source_ = std::exchange(other.source_, nullptr);
    conn_ = std::exchange(other.conn_, nullptr);
  }
  return *this;
}

PooledConnection::~PooledConnection() { reset(); }

void PooledConnection::reset() noexcept {
  if (source_ != nullptr && conn_ != nullptr) {
    // Never hand back an open transaction, nor one the server ended that still awaits its
    // rollback (in_transaction() is false then; rollback() is a no-op when nothing is open).
    conn_->rollback();
    source_->give_back(conn_);
  }
  source_ = nullptr;
  conn_ = nullptr;
}

namespace {

// One connection shared by turns. Owns it when constructed with `owned`.
class SingleSource final : public ConnectionSource {
 public:
  SingleSource(Connection& conn, std::unique_ptr<Connection> owned)
      : conn_(conn), owned_(std::move(owned)) {}

  Dialect dialect() const noexcept override { return conn_.dialect(); }

  PooledConnection acquire() override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !lent_; });
    if (conn_.broken()) {
      throw Error(ErrorCode::kConnectionLost,
                  conn_.describe() + ": the connection is broken; open a new one");
    }
    lent_ = true;
    return PooledConnection(this, &conn_);
  }

  std::string describe() const override { return conn_.describe(); }

 protected:
  void give_back(Connection*) noexcept override {
    {
      std::lock_guard lock(mu_);
      lent_ = false;
    }
    cv_.notify_one();
  }

 private:
  Connection& conn_;
  std::unique_ptr<Connection> owned_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool lent_ = false;
};

}  // namespace

std::unique_ptr<ConnectionSource> borrow(Connection& conn) {
  return std::make_unique<SingleSource>(conn, nullptr);
}

std::unique_ptr<ConnectionSource> single(std::unique_ptr<Connection> conn) {
  if (!conn) throw Error(ErrorCode::kInvalidArgument, "single(): the connection is null");
  Connection& ref = *conn;
  return std::make_unique<SingleSource>(ref, std::move(conn));
}

Pool::Pool(Dialect dialect, ConnectionFactory factory, PoolOptions options)
    : dialect_(dialect), factory_(std::move(factory)), options_(options) {
  if (options_.max_size == 0) {
    throw Error(ErrorCode::kInvalidArgument, "pool max_size must be at least 1");
  }
  if (!factory_) throw Error(ErrorCode::kInvalidArgument, "pool needs a connection factory");
}

Pool::~Pool() = default;

PooledConnection Pool::acquire() {
  // The connection this thread used last, taken again if idle: moving sessions between threads
  // at every acquire cost a busy pool about a tenth of its throughput (the bench's session lock
  // at 8 connections). A pointer kept only to compare, from whichever pool.
  thread_local const Connection* last = nullptr;
  std::vector<std::unique_ptr<Connection>> closing;  // closed after the mutex (declared first)
  std::unique_lock lock(mu_);
  auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  for (;;) {
    if (!idle_.empty()) {
      auto it = std::find_if(idle_.begin(), idle_.end(),
                             [](const std::unique_ptr<Connection>& c) { return c.get() == last; });
      if (it == idle_.end()) it = idle_.end() - 1;
      if ((*it)->broken()) {
        // Broke while idle, or opened by the parent of this forked process (whose socket it
        // shares): dropped, never lent.
        closing.push_back(std::move(*it));
        idle_.erase(it);
        continue;
      }
      lent_.push_back(std::move(*it));
      idle_.erase(it);
      last = lent_.back().get();
      return PooledConnection(this, lent_.back().get());
    }
    if (idle_.size() + lent_.size() + opening_ < options_.max_size) break;
    if (!cv_.wait_until(lock, deadline, [&] {
          return !idle_.empty() || idle_.size() + lent_.size() + opening_ < options_.max_size;
        })) {
      lock.unlock();  // an observer's code runs without the pool's mutex
      detail::report_pool_exhausted(options_.max_size, options_.acquire_timeout);
      throw Error(ErrorCode::kPoolExhausted,
                  "no free connection in the pool after " +
                      std::to_string(options_.acquire_timeout.count()) +
                      " ms; raise the pool size or release leases sooner");
    }
  }
  ++opening_;
  lock.unlock();
  std::unique_ptr<Connection> conn;
  try {
    conn = factory_();
  } catch (...) {
    lock.lock();
    --opening_;
    cv_.notify_one();
    throw;
  }
  lock.lock();
  --opening_;
  if (!conn) {
    cv_.notify_one();
    throw Error(ErrorCode::kFailedPrecondition, "the pool's connection factory returned null");
  }
  if (description_.empty()) description_ = conn->describe();
  lent_.push_back(std::move(conn));
  last = lent_.back().get();
  return PooledConnection(this, lent_.back().get());
}

void Pool::give_back(Connection* conn) noexcept {
  std::vector<std::unique_ptr<Connection>> closing;  // closed outside the mutex
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(lent_.begin(), lent_.end(),
                           [&](const std::unique_ptr<Connection>& c) { return c.get() == conn; });
    if (it != lent_.end()) {
      if ((*it)->broken()) {
        // What broke one connection (a server restart, a network cut) has most likely broken
        // the idle ones too: drop them, so a retry gets a fresh connection, not another dead one.
        closing = std::move(idle_);
        idle_.clear();
        closing.push_back(std::move(*it));
      } else {
        idle_.push_back(std::move(*it));
      }
      lent_.erase(it);
    }
  }
  cv_.notify_all();
}

std::string Pool::describe() const {
  std::lock_guard lock(mu_);
  return description_.empty() ? std::string("pool (no connection opened yet)") : description_;
}

std::size_t Pool::open_count() const {
  std::lock_guard lock(mu_);
  return idle_.size() + lent_.size();
}

}  // namespace dblock
