// SPDX-License-Identifier: Apache-2.0
// Scenario 8: an acquire storm. 64 clients, each with a connection of its own, try one key at
// the same instant, generation after generation, on a free row and (every other generation) on
// a missing one (InnoDB answers some of these inserts with deadlocks and duplicate-key waits).
// Exactly one client wins each generation, and no exception reaches any caller.
//
// Exclusive strategies (unique key, row lock with NOWAIT, session lock): one acquisition per
// generation (a session lock has no row to delete: its storms are all on a free lock).
// Optimistic: every client reads the same version and increments the counter in its
// transaction; exactly one commit per generation (version), the others get kConflict.
// Transactional winners increment the counter, which must end equal to the generations.
#include <atomic>
#include <barrier>
#include <thread>

#include "dblock/open.hpp"
#include "fault_fixture.hpp"
#include "resource.hpp"

namespace dblock::testing {
namespace {

class StormTest : public FaultTest {
 protected:
  // Deadlocks the server has counted so far (server-wide: other tests add theirs).
  std::int64_t server_deadlocks() {
    if (backend().dialect == Dialect::kPostgreSQL) {
      return conn_
          ->execute(
              "SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()")
          .int64_at(0, "n");
    }
    auto r = conn_->execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'");
    return r.empty() ? 0 : std::stoll(r.at(0, 1).value_or("0"));
  }
};

TEST_P(StormTest, SixtyFourClientsOneWinnerPerGenerationNoExceptions) {
  constexpr int kClients = 64, kGenerations = 12;
  if (!strategy().lock_row) {
    not_applicable(
        "no lock row to delete: every generation storms the server's lock table in memory "
        "(pg_try_advisory_lock, GET_LOCK); checked that one client wins each generation, with "
        "no exception, and that no token repeats over the run");
  }
  auto pool = open_pool(backend().url(), {.max_size = kClients});
  auto lock = make_lock(*pool);
  HistoryWriter history(new_history("storm"));
  const auto deadlocks_before = server_deadlocks();
  std::vector<std::atomic<int>> winners(kGenerations);
  std::atomic<int> conflicts{0};
  std::atomic<int> exceptions{0};
  std::barrier sync(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const std::string client = "c" + std::to_string(c);
      LockOptions options;
      options.owner = Owner::named(client);
      options.auto_renew = false;
      for (int g = 0; g < kGenerations; ++g) {
        sync.arrive_and_wait();  // everybody tries at once
        std::optional<Lease> lease;
        try {
          const auto sent = monotonic_us();
          lease = lock->try_acquire("storm", options);
          if (lease) {
            history.acquired(client, "storm", lease->fencing_token(), monotonic_us(), sent,
                             options.ttl.count());
            if (strategy().exclusive) ++winners[g];
          } else if (!strategy().exclusive) {
            ADD_FAILURE() << client << ": an optimistic acquire reported the key busy";
          }
        } catch (const std::exception& e) {
          ++exceptions;
          ADD_FAILURE() << client << ": " << e.what();
        }
        sync.arrive_and_wait();  // every try of this generation is over
        if (lease) {
          try {
            if (strategy().transactional) {
              increment_counter(*lease->connection(), tables_, client);
            }
            const auto token = lease->fencing_token();
            const auto sent = monotonic_us();
            auto outcome = lease->release();
            history.released(client, "storm", token, sent, std::string(to_string(outcome)));
            if (!strategy().exclusive && outcome == ReleaseOutcome::kReleased) ++winners[g];
            if (outcome == ReleaseOutcome::kConflict) ++conflicts;
          } catch (const std::exception& e) {
            ++exceptions;
            ADD_FAILURE() << client << " release: " << e.what();
          }
        }
        sync.arrive_and_wait();  // the key is free again
        if (c == 0 && g % 2 == 0 && strategy().lock_row) {
          // Every other generation storms a missing row, as after the cleaner deleted it: a
          // race of plain inserts (duplicate keys, InnoDB gap locks) instead of updates.
          conn_->execute("DELETE FROM " + tables_.qualified(backend().dialect, strategy().table));
        }
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : clients) t.join();
  std::printf(
      "[ storm    ] %s: %d clients x %d generations; %d conflicts; the server counted %lld "
      "deadlocks meanwhile (server-wide), none reached a caller\n",
      backend().name.c_str(), kClients, kGenerations, conflicts.load(),
      static_cast<long long>(server_deadlocks() - deadlocks_before));
  EXPECT_EQ(exceptions.load(), 0);
  for (int g = 0; g < kGenerations; ++g) {
    EXPECT_EQ(winners[g].load(), 1) << "generation " << g;
  }
  if (!strategy().exclusive) {
    EXPECT_EQ(conflicts.load(), (kClients - 1) * kGenerations);
  }
  if (strategy().transactional) {
    EXPECT_EQ(counter(), kGenerations);
  }
  check_histories();
}

INSTANTIATE_TEST_SUITE_P(Faults, StormTest, ::testing::ValuesIn(fault_cases()), FaultCaseName());

}  // namespace
}  // namespace dblock::testing
