// SPDX-License-Identifier: Apache-2.0
#include "dblock/connection_source.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "dblock/error.hpp"

namespace dblock {
namespace {

// A connection that only records what is done to it (the pool logic needs no database).
class RecordingConnection final : public Connection {
 public:
  explicit RecordingConnection(std::atomic<int>* live) : live_(live) { ++*live_; }
  ~RecordingConnection() override { --*live_; }
  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }
  Result execute(std::string_view, std::span<const Value>) override { return {}; }
  void begin() override { in_tx_ = true; }
  void commit() override { in_tx_ = false; }
  void rollback() noexcept override {
    in_tx_ = false;
    ++rollbacks;
  }
  bool in_transaction() const noexcept override { return in_tx_; }
  bool broken() const noexcept override { return broken_; }
  std::string describe() const override { return "recording"; }

  bool broken_ = false;
  int rollbacks = 0;

 private:
  std::atomic<int>* live_;
  bool in_tx_ = false;
};

TEST(Pool, ReusesIdleConnections) {
  std::atomic<int> live{0}, opened{0};
  Pool pool(Dialect::kPostgreSQL, [&] {
    ++opened;
    return std::make_unique<RecordingConnection>(&live);
  });
  Connection* first = nullptr;
  {
    auto c = pool.acquire();
    first = c.get();
  }
  auto c = pool.acquire();
  EXPECT_EQ(c.get(), first);
  EXPECT_EQ(opened.load(), 1);
}

// A thread gets back the connection it used last while that one is idle, even when another
// came back after it: the client thread and the server session it talks to stay paired, which
// keeps a busy pool from moving every session across threads.
TEST(Pool, AThreadGetsBackTheConnectionItUsedLast) {
  std::atomic<int> live{0};
  Pool pool(Dialect::kPostgreSQL, [&] { return std::make_unique<RecordingConnection>(&live); });
  PooledConnection a = pool.acquire();
  PooledConnection b;
  std::thread([&] { b = pool.acquire(); }).join();  // a is lent: another thread's connection
  Connection* mine = a.get();
  Connection* theirs = b.get();
  a.reset();
  b.reset();  // b comes back last, so it is on top of the idle ones
  ASSERT_NE(mine, theirs);
  auto again = pool.acquire();
  EXPECT_EQ(again.get(), mine);
  std::thread([&] {
    auto other = pool.acquire();
    EXPECT_EQ(other.get(), theirs);
  }).join();
  EXPECT_EQ(pool.open_count(), 2u);
}

TEST(Pool, ABrokenConnectionTakesTheIdleOnesWithIt) {
  std::atomic<int> live{0};
  Pool pool(Dialect::kPostgreSQL, [&] { return std::make_unique<RecordingConnection>(&live); });
  {
    auto a = pool.acquire();
    auto b = pool.acquire();
  }
  EXPECT_EQ(pool.open_count(), 2u);
  {
    auto c = pool.acquire();  // one of the idle two
    static_cast<RecordingConnection*>(c.get())->broken_ = true;
  }
  EXPECT_EQ(pool.open_count(), 0u);
  EXPECT_EQ(live.load(), 0);
}

TEST(Pool, OpensDedicatedSessionsUnlessToldItSitsBehindATransactionPooler) {
  std::atomic<int> live{0};
  auto factory = [&] { return std::make_unique<RecordingConnection>(&live); };
  Pool sessions(Dialect::kPostgreSQL, factory);
  EXPECT_NE(sessions.open_dedicated(), nullptr);
  EXPECT_TRUE(sessions.keeps_sessions());
  Pool pooled(Dialect::kPostgreSQL, factory, {.dedicated_sessions = false});
  EXPECT_EQ(pooled.open_dedicated(), nullptr);
  EXPECT_FALSE(pooled.keeps_sessions());  // SessionLock refuses it
}

TEST(Pool, DropsBrokenConnectionsAndRollsBackOpenTransactions) {
  std::atomic<int> live{0};
  Pool pool(Dialect::kPostgreSQL, [&] { return std::make_unique<RecordingConnection>(&live); });
  {
    auto c = pool.acquire();
    c->begin();
  }
  {
    auto c = pool.acquire();
    auto* rc = static_cast<RecordingConnection*>(c.get());
    EXPECT_FALSE(rc->in_transaction());
    EXPECT_EQ(rc->rollbacks, 1);
    rc->broken_ = true;
  }
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(pool.open_count(), 0u);
}

TEST(Pool, NeverOpensMoreThanMaxSize) {
  std::atomic<int> live{0}, peak{0};
  Pool pool(Dialect::kPostgreSQL,
            [&] {
              auto c = std::make_unique<RecordingConnection>(&live);
              int now = live.load();
              int p = peak.load();
              while (now > p && !peak.compare_exchange_weak(p, now)) {
              }
              return c;
            },
            {.max_size = 3});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto c = pool.acquire();
        std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 3);
  EXPECT_LE(pool.open_count(), 3u);
}

TEST(Pool, TimesOutWhenExhausted) {
  std::atomic<int> live{0};
  Pool pool(Dialect::kPostgreSQL, [&] { return std::make_unique<RecordingConnection>(&live); },
            {.max_size = 1, .acquire_timeout = std::chrono::milliseconds(50)});
  auto held = pool.acquire();
  try {
    pool.acquire();
    ADD_FAILURE() << "a second connection was lent from a pool of one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPoolExhausted) << e.what();
    EXPECT_EQ(e.retry_scope(), RetryScope::kCall);
  }
}

TEST(Pool, FactoryFailurePropagatesAndFreesTheSlot) {
  int calls = 0;
  std::atomic<int> live{0};
  Pool pool(Dialect::kMySQL,
            [&]() -> std::unique_ptr<Connection> {
              if (++calls == 1) throw Error(ErrorCode::kConnectFailed, "refused");
              return std::make_unique<RecordingConnection>(&live);
            },
            {.max_size = 1});
  EXPECT_THROW(pool.acquire(), Error);
  EXPECT_NO_THROW(pool.acquire());
}

TEST(Borrow, SerialisesAndRefusesABrokenConnection) {
  std::atomic<int> live{0};
  RecordingConnection conn(&live);
  auto source = borrow(conn);
  std::atomic<int> inside{0}, max_inside{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        auto c = source->acquire();
        int now = ++inside;
        if (now > max_inside) max_inside = now;
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_inside.load(), 1);
  conn.broken_ = true;
  try {
    source->acquire();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectionLost);
  }
}

}  // namespace
}  // namespace dblock
