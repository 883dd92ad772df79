// SPDX-License-Identifier: Apache-2.0
// The fixture every fault scenario starts from: one strategy on one database (the default
// driver of each: PostgreSQL x libpqxx, MariaDB/MySQL x libmysqlclient), dblock's tables
// migrated under a fresh prefix, a `resource` table for fenced writes, and history files that
// are checked for mutual exclusion (history.hpp) when the test asks. The locks whose connections
// a scenario breaks come from here too: one behind a fault proxy (cut_off_lock.hpp,
// cut_off_holder.hpp) and one on a pool of one session the test kills (one_session_lock.hpp).
//
// Thread-safety: as GoogleTest fixtures (one test thread; helpers open their own connections).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends.hpp"
#include "cut_off_holder.hpp"
#include "cut_off_lock.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/error.hpp"
#include "dblock/lock.hpp"
#include "dblock/lock_table.hpp"
#include "history.hpp"
#include "one_session_lock.hpp"
#include "strategies.hpp"

namespace dblock::testing {

struct FaultCase {
  Backend backend;
  StrategyUnderTest strategy;
};

// Every strategy x the default driver of each database built.
std::vector<FaultCase> fault_cases();

// Lock options for the owner named `client`. Scenarios that time renewals themselves pass
// auto_renew = false.
inline LockOptions owned_by(const std::string& client, bool auto_renew = true) {
  LockOptions options;
  options.owner = Owner::named(client);
  options.auto_renew = auto_renew;
  return options;
}

// The code of the dblock::Error `fn` throws, whose message is printed as "[ reported ] what:
// ..."; nullopt, and a failure, when `fn` returns instead.
template <class Fn>
std::optional<ErrorCode> error_of(Fn&& fn, const char* what) {
  try {
    fn();
  } catch (const Error& e) {
    std::printf("[ reported ] %s: %s\n", what, e.what());
    return e.code();
  }
  ADD_FAILURE() << what << ": reported an outcome instead of an error";
  return std::nullopt;
}

inline void PrintTo(const FaultCase& c, std::ostream* os) {
  *os << c.strategy.name << "_" << c.backend.name;
}

struct FaultCaseName {
  std::string operator()(const ::testing::TestParamInfo<FaultCase>& info) const {
    return info.param.strategy.name + "_" + info.param.backend.name;
  }
};

// A scenario on one key that the test cuts off: the lock behind the fault proxy, another lock of
// the same strategy and tables for the other owners, and the history both write, named after the
// key (FaultTest::cut_off_scene).
struct CutOffScene {
  CutOffLock cut;
  std::unique_ptr<Lock> other;
  HistoryWriter history;
  std::string key;
};

// The same for a lock whose one session the test kills (FaultTest::one_session_scene).
struct OneSessionScene {
  OneSessionLock one;
  std::unique_ptr<Lock> other;
  HistoryWriter history;
};

class FaultTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const Backend& backend() const { return GetParam().backend; }
  const StrategyUnderTest& strategy() const { return GetParam().strategy; }
  std::unique_ptr<Lock> make_lock(ConnectionSource& source) const {
    return strategy().make(source, tables_);
  }
  std::unique_ptr<Lock> make_lock() const { return make_lock(*pool_); }
  // A lock of this test's strategy and tables whose network the test cuts (cut_off_lock.hpp).
  CutOffLock cut_off_lock(PoolOptions pool = {.max_size = 2}) const;
  // cut_off_lock(), make_lock() and a new history, for `key`:
  //   auto [cut, other, history, key] = cut_off_scene("lost-reply");
  CutOffScene cut_off_scene(const std::string& key);
  // A lock of this test's strategy and tables whose one session the test kills
  // (one_session_lock.hpp).
  OneSessionLock one_session_lock() const { return OneSessionLock(backend(), strategy(), tables_); }
  // one_session_lock(), make_lock() and a new history named `stem`:
  //   auto [one, other, history] = one_session_scene("mid-hold");
  OneSessionScene one_session_scene(const std::string& stem);
  // Scenario 6's holder of "k", with a lease of `ttl`, whose network the test cuts, and the
  // owner waiting to take the key (cut_off_holder.hpp), with a history of their own.
  CutOffHolder cut_off_holder(std::chrono::milliseconds ttl);

  // The strategy's row of `key` as an operator lists it (lock_table.hpp), if it has one.
  std::optional<LockRow> row(const std::string& key);
  // The strategy's rows of `key` that have not expired.
  std::size_t live_rows(const std::string& key);

  // The database URL (with ?driver=) as text, for worker processes.
  std::string worker_url() const;
  // A fresh history file for this test (removed at teardown).
  std::string new_history(const std::string& stem);
  // argv for the fault worker: MODE STRATEGY URL PREFIX KEY TTL_MS HISTORY CLIENT [extra].
  std::vector<std::string> worker_argv(const std::string& mode, const std::string& key, int ttl_ms,
                                       const std::string& history, const std::string& client,
                                       const std::vector<std::string>& extra = {}) const;
  // UPDATE resource SET token = `token` WHERE token < `token`: rows changed (0: fenced off).
  std::uint64_t fenced_write(std::int64_t token, const std::string& writer);
  // Checks every history this test wrote (scenario 10), prints the summary, expects it clean:
  // mutual exclusion for exclusive strategies, one commit per version for optimistic ones.
  HistoryReport check_histories();
  // Prints, for a scenario that means nothing for this strategy as the issue states it, one
  // line saying why and what the test checks instead.
  void not_applicable(const std::string& why) const;
  // Row 1 of the resource table: its token column (a counter for transactional strategies,
  // which increment it in the lease's transaction) and its writer.
  std::int64_t counter();
  std::string writer();
  // Rows of the resource table whose writer is `writer` (committed ones: conn_ is outside).
  std::int64_t rows_written_by(const std::string& writer);

  TableNames tables_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Connection> conn_;  // a connection of the test's own, outside any lock
  std::vector<std::string> histories_;
};

}  // namespace dblock::testing
