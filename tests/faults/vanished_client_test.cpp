// SPDX-License-Identifier: Apache-2.0
// A holder of a lock kept by its session (a session lock; a row lock's transaction) whose host
// vanishes: no FIN, no RST, every packet between it and the server dropped (an nftables rule on
// this machine's loopback, matching the holder's port). Neither side hears anything; each one
// gives the other up only when its TCP keepalive fails. On PostgreSQL dblock sets both bounds
// (drivers/connect_options.hpp: the client gives up after 25 s, the server after 90 s, checked by
// network_bounds_test.cpp); here both are shortened through the URL in the same proportion
// (client 3 s, server 6 s) to keep the test short. The guarantee: the holder reports its lease
// lost before anyone else gets the lock, and the lock is free again in bounded time, not after
// the two hours of the kernel's default keepalive.
//
// PostgreSQL only: MySQL and MariaDB have no session setting for the server's keepalive, so a
// vanished holder's lock lasts until the server host's keepalive or wait_timeout ends the
// session (docs/connections.md, "Network timeouts").
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "backends.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/session_lock.hpp"
#include "process.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kNft = "/usr/sbin/nft";

// Drops every packet between one local TCP port and the server's port, while it lives and for
// at most a minute: the port sits in an nftables set whose elements expire, so a test killed
// half-way cannot leave a rule behind that later hangs another connection reusing that port.
// Tables a dead test process left (named after its pid) are deleted on the way in.
class PortCut {
 public:
  // Empty `why_not` on success.
  PortCut(int client_port, int server_port, std::string* why_not) {
    remove_stale_tables();
    table_ = "dblock_cut_" + std::to_string(::getpid()) + "_" + std::to_string(client_port);
    const std::string s = std::to_string(server_port);
    for (const std::string& command :
         {"add table inet " + table_,
          "add set inet " + table_ + " cut { type inet_service ; flags timeout ; }",
          "add chain inet " + table_ + " out { type filter hook output priority 0 ; }",
          "add rule inet " + table_ + " out tcp sport @cut tcp dport " + s + " drop",
          "add rule inet " + table_ + " out tcp dport @cut tcp sport " + s + " drop",
          "add element inet " + table_ + " cut { " + std::to_string(client_port) +
              " timeout 60s }"}) {
      auto r = run_process({kNft, command});
      if (r.exit_code != 0) {
        *why_not = "`nft " + command + "` exited " + std::to_string(r.exit_code) + ": " + r.err;
        return;
      }
      made_ = true;
    }
  }
  ~PortCut() {
    if (made_) run_process({kNft, "delete table inet " + table_});
  }
  PortCut(const PortCut&) = delete;
  PortCut& operator=(const PortCut&) = delete;

 private:
  static void remove_stale_tables() {
    const std::string listing = run_process({kNft, "list tables"}).out;
    const std::string marker = "table inet dblock_cut_";
    for (auto at = listing.find(marker); at != std::string::npos;
         at = listing.find(marker, at + 1)) {
      const auto name_at = at + std::string("table inet ").size();
      const std::string name = listing.substr(name_at, listing.find('\n', name_at) - name_at);
      const long pid = std::strtol(name.c_str() + std::string("dblock_cut_").size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        run_process({kNft, "delete table inet " + name});
      }
    }
  }

  std::string table_;
  bool made_ = false;
};

struct VanishCase {
  Backend backend;
  std::string strategy;  // "session_lock" or "row_lock"
};

std::unique_ptr<Lock> make_lock(const std::string& strategy, ConnectionSource& source,
                                const TableNames& tables) {
  if (strategy == "session_lock")
    return std::make_unique<SessionLock>(source, SessionLockOptions{tables});
  RowLockOptions options;
  options.tables = tables;
  return std::make_unique<RowLock>(source, options);
}

class VanishedClientTest : public ::testing::TestWithParam<VanishCase> {};

TEST_P(VanishedClientTest, TheHolderReportsItsLeaseLostBeforeTheServerLetsAnotherOwnerIn) {
  const Backend& backend = GetParam().backend;
  const std::string& strategy = GetParam().strategy;
  const TableNames tables(unique_name("v") + "_");
  auto admin = backend.connect();
  Migrator(*admin, tables).up();

  // The holder's one connection: client keepalive after 1 s idle, 2 probes 1 s apart (3 s);
  // the server's after 4 s, 2 probes 1 s apart, and 6 s for data it sent to stay unacknowledged
  // (6 s).
  DatabaseUrl url = backend.url();
  for (auto [k, v] : {std::pair{"keepalives", "1"},
                      {"keepalives_idle", "1"},
                      {"keepalives_interval", "1"},
                      {"keepalives_count", "2"},
                      {"options",
                       "-c tcp_keepalives_idle=4 -c tcp_keepalives_interval=1 "
                       "-c tcp_keepalives_count=2 -c tcp_user_timeout=6000"}}) {
    url.params.emplace_back(k, v);
  }
  auto holder_pool = open_pool(url, {.max_size = 1});
  std::int64_t holder_pid = 0;
  int holder_port = 0;
  {
    auto c = holder_pool->acquire();
    auto r = c->execute("SELECT pg_backend_pid() AS pid, inet_client_port() AS port");
    holder_pid = r.int64_at(0, "pid");
    holder_port = static_cast<int>(r.int64_at(0, "port"));
  }
  auto holder_lock = make_lock(strategy, *holder_pool, tables);
  LockOptions as_holder;
  as_holder.owner = Owner::named("holder");
  auto held = holder_lock->try_acquire("k", as_holder);
  ASSERT_TRUE(held);

  std::string why_not;
  auto cut = std::make_unique<PortCut>(holder_port, url.effective_port(), &why_not);
  if (!why_not.empty()) {
    std::printf("[ nft      ] not possible here: %s\n", why_not.c_str());
    return;
  }
  const auto cut_at = Clock::now();
  auto since_cut = [&] {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - cut_at).count();
  };

  auto taker_pool = open_pool(backend.url(), {.max_size = 2});
  auto taker_lock = make_lock(strategy, *taker_pool, tables);
  std::atomic<long> taken_ms{-1};
  auto taker = std::async(std::launch::async, [&] {
    LockOptions as_taker;
    as_taker.owner = Owner::named("taker");
    auto lease = taker_lock->acquire("k", milliseconds(30000), as_taker);
    taken_ms = lease ? since_cut() : -1;
    return lease.has_value();
  });

  long lost_ms = -1;
  while (since_cut() < 30000 && taken_ms.load() < 0) {
    if (lost_ms < 0 && held->lost()) lost_ms = since_cut();
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (lost_ms < 0 && held->lost()) lost_ms = since_cut();
  EXPECT_TRUE(taker.get()) << "nobody got the lock within 30 s of the holder vanishing";
  std::printf("[ vanished ] %s %s: holder lost at %ld ms, taker got the lock at %ld ms\n",
              backend.name.c_str(), strategy.c_str(), lost_ms, taken_ms.load());
  ASSERT_GE(lost_ms, 0) << "the holder still reports its lease held after another owner got it";
  EXPECT_LE(lost_ms, taken_ms.load()) << "two owners: the taker got the lock while the holder "
                                         "still reported its lease held";
  EXPECT_LT(lost_ms, 5000) << "the holder's 3 s bound";
  EXPECT_LT(taken_ms.load(), 12000) << "the server's 6 s bound";
  // The server ended the holder's session.
  auto r = admin->execute("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1",
                          {Value(holder_pid)});
  EXPECT_EQ(r.int64_at(0, "n"), 0);
  cut.reset();
  EXPECT_THROW(held->release(), Error);
  backend.drop_tables_with_prefix(*admin, tables.prefix());
}

std::vector<VanishCase> cases() {
  std::vector<VanishCase> out;
  for (const Backend& b : all_backends()) {
    if (b.dialect != Dialect::kPostgreSQL) continue;
    for (const char* s : {"session_lock", "row_lock"}) out.push_back({b, s});
  }
  return out;
}

struct VanishCaseName {
  std::string operator()(const ::testing::TestParamInfo<VanishCase>& info) const {
    return info.param.backend.name + "_" + info.param.strategy;
  }
};

INSTANTIATE_TEST_SUITE_P(Pairs, VanishedClientTest, ::testing::ValuesIn(cases()), VanishCaseName());

}  // namespace
}  // namespace dblock::testing
