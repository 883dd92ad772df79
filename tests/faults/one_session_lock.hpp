// SPDX-License-Identifier: Apache-2.0
// A lock whose server session a fault scenario kills (scenario 3): a lock of the scenario's
// strategy over a pool of one connection, so the session its next lease uses is the one
// session() names. The scenario kills it from a connection of its own (pg_terminate_backend,
// KILL CONNECTION), mid-hold or while an acquire waits in it.
//
//   auto one = one_session_lock();  // FaultTest: this test's strategy and tables
//   auto lease = one.lock->try_acquire("k", owned_by("holder"));
//   one.kill(*conn_);               // the lease's session is gone; the pool opens a new one
//
// Thread-safety: as dblock's Pool and Lock.
#pragma once

#include <cstdint>
#include <memory>

#include "backends.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "strategies.hpp"

namespace dblock::testing {

struct OneSessionLock {
  OneSessionLock(const Backend& backend, const StrategyUnderTest& strategy,
                 const TableNames& tables);

  // The server id of the pool's connection (opened if it is not yet).
  std::int64_t session() const;
  // Kills that session from `killer` and gives the server 100 ms to end it.
  void kill(Connection& killer) const;

  const Backend& backend;
  std::unique_ptr<Pool> pool;  // max_size 1
  std::unique_ptr<Lock> lock;  // over `pool`
};

}  // namespace dblock::testing
