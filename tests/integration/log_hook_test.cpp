// SPDX-License-Identifier: Apache-2.0
// The log hook (dblock/log.hpp) against every database x driver pair: what the library notices
// without throwing reaches the handler, once, with the key. Renewals that fail while the
// database cannot be reached (the pool's sessions killed and new ones refused) are logged with
// the time left, and their recovery too; a lease that runs out unrenewed is logged lost; a
// release that cannot be sent is kept and logged, and so is its resend; on PostgreSQL a killed
// notification session is logged and so is its return. With no handler nothing is called.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/error.hpp"
#include "dblock/log.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "tagged_pool.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The messages the hook received while it lives; uninstalls itself.
class Recorded {
 public:
  Recorded() {
    set_log_handler([this](LogLevel level, std::string_view message) {
      std::lock_guard lock(mu_);
      lines_.push_back(std::string(to_string(level)) + ": " + std::string(message));
    });
  }
  ~Recorded() { set_log_handler(nullptr); }
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;

  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // The lines holding every one of `parts`.
  std::vector<std::string> matching(const std::vector<std::string>& parts) const {
    std::vector<std::string> out;
    for (const auto& line : lines()) {
      if (std::all_of(parts.begin(), parts.end(),
                      [&](const std::string& p) { return line.find(p) != std::string::npos; })) {
        out.push_back(line);
      }
    }
    return out;
  }
  // Waits up to 10 s for a line holding every one of `parts`.
  bool wait_for(const std::vector<std::string>& parts) const {
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (matching(parts).empty()) {
      if (Clock::now() > give_up) return false;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return true;
  }
  std::string all() const {
    std::string out;
    for (const auto& line : lines()) out += line + "\n";
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

class LogHookTest : public MigratedPoolTest {
 protected:
  LogHookTest() : MigratedPoolTest("log", 2) {}
  // The database cut off from `pool`: its sessions killed, new ones refused.
  void cut_off(TaggedPool& pool) {
    pool.refuse_connections(true);
    auto killer = backend().connect();
    pool.kill_sessions(*killer);
  }
};

TEST_P(LogHookTest, FailingRenewalsAreLoggedWithTheTimeLeftAndSoIsTheirRecovery) {
  TaggedPool tagged(backend(), 2);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("renew");
  auto lease = lock.try_acquire(key, as("holder", std::chrono::seconds(3)));
  ASSERT_TRUE(lease);
  Recorded log;
  cut_off(tagged);
  // Renewals go out every second; each failed one says how long the lease has left.
  ASSERT_TRUE(log.wait_for(
      {"warning: renewing the lease of key '" + key + "' failed", "it counts as lost in"}))
      << log.all();
  tagged.refuse_connections(false);
  ASSERT_TRUE(log.wait_for({"info: renewing the lease of key '" + key + "' works again"}))
      << log.all();
  EXPECT_FALSE(lease->lost());
  EXPECT_TRUE(log.matching({"is lost"}).empty()) << log.all();
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

TEST_P(LogHookTest, ALeaseThatRunsOutUnrenewedIsLoggedLostOnce) {
  TaggedPool tagged(backend(), 2);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("lost");
  auto lease = lock.try_acquire(key, as("holder", milliseconds(1500)));
  ASSERT_TRUE(lease);
  Recorded log;
  cut_off(tagged);
  ASSERT_TRUE(log.wait_for({"error: the lease of key '" + key + "' (fencing token " +
                            std::to_string(lease->fencing_token()) + ") is lost"}))
      << log.all();
  EXPECT_TRUE(lease->lost());
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(log.matching({"is lost"}).size(), 1u) << log.all();
  tagged.refuse_connections(false);
}

TEST_P(LogHookTest, AReleaseKeptAfterALostConnectionIsLoggedAndSoIsItsResend) {
  TaggedPool tagged(backend(), 2);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("kept");
  auto lease = lock.try_acquire(key, as("holder", std::chrono::seconds(30), false));
  ASSERT_TRUE(lease);
  Recorded log;
  cut_off(tagged);
  EXPECT_THROW(lease->release(), Error);
  EXPECT_EQ(log.matching({"warning: releasing key '" + key + "' failed", "kept"}).size(), 1u)
      << log.all();
  tagged.refuse_connections(false);
  // The same owner takes the key again: the kept release goes first.
  auto again = lock.try_acquire(key, as("holder", std::chrono::seconds(30), false));
  ASSERT_TRUE(again);
  EXPECT_EQ(log.matching({"info: sending again the release of key '" + key + "'"}).size(), 1u)
      << log.all();
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
}

TEST_P(LogHookTest, ANotificationSessionThatEndsIsLoggedWhereThereIsOne) {
  TaggedPool tagged(backend(), 4);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("listen");
  auto held = lock.try_acquire(key, as("holder"));
  ASSERT_TRUE(held);
  // A waiter asleep makes the lock listen (PostgreSQL).
  std::optional<Lease> taken;
  std::thread waiter([&] {
    // A statement on a killed session fails; a caller tries again.
    for (int attempt = 0; attempt < 2 && !taken; ++attempt) {
      try {
        taken = lock.acquire(key, std::chrono::seconds(20), as("waiter"));
      } catch (const Error&) {
      }
    }
  });
  std::this_thread::sleep_for(milliseconds(500));
  Recorded log;
  auto killer = backend().connect();
  tagged.kill_sessions(*killer);
  if (backend().dialect == Dialect::kPostgreSQL) {
    EXPECT_TRUE(log.wait_for(
        {"warning: the session listening on", "for releases ended", "reconnecting in 500 ms"}))
        << log.all();
    EXPECT_TRUE(log.wait_for({"info: listening on", "for releases again"})) << log.all();
  }
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  ASSERT_TRUE(taken) << "the waiter did not get the key after the sessions were killed";
  if (backend().dialect != Dialect::kPostgreSQL) {
    EXPECT_TRUE(log.matching({"listening"}).empty()) << "no notifications here: " << log.all();
  }
  EXPECT_EQ(taken->release(), ReleaseOutcome::kReleased);
}

TEST_P(LogHookTest, NothingIsCalledOnceTheHandlerIsRemovedAndAThrowingHandlerIsContained) {
  TaggedPool tagged(backend(), 2);
  UniqueKeyLock lock(tagged.pool(), {.tables = tables_});
  const std::string key = unique_name("quiet");
  auto lease = lock.try_acquire(key, as("holder", milliseconds(1500)));
  ASSERT_TRUE(lease);
  std::atomic<int> calls{0};
  set_log_handler([&](LogLevel, std::string_view) {
    ++calls;
    throw std::runtime_error("a handler that throws");
  });
  cut_off(tagged);
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (calls.load() == 0 && Clock::now() < give_up) std::this_thread::sleep_for(milliseconds(10));
  set_log_handler(nullptr);
  EXPECT_GT(calls.load(), 0) << "the failing renewals were not logged";
  const int seen = calls.load();
  // The renewer survived the throwing handler: it goes on until the lease is lost.
  while (!lease->lost() && Clock::now() < give_up + std::chrono::seconds(5)) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(lease->lost());
  EXPECT_EQ(calls.load(), seen) << "a removed handler was called";
  tagged.refuse_connections(false);
}

INSTANTIATE_TEST_SUITE_P(Pairs, LogHookTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
