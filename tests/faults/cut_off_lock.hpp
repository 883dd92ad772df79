// SPDX-License-Identifier: Apache-2.0
// A holder whose network a fault scenario cuts: a lock of the scenario's strategy on a pool whose
// connections pass through a fault proxy of their own (fault_proxy.hpp). Through the proxy the
// scenario loses the reply of a statement the server ran, drops a request the server never sees,
// or holds every packet in a blackhole; heal() ends the blackhole and closes the proxied
// connections, so a statement hung in it fails and the server ends the sessions it kept. The
// other owners of a scenario use locks on a direct pool, which the proxy never touches.
//
//   auto cut = cut_off_lock();              // FaultTest: this test's strategy and tables
//   cut.proxy.cut_after_request_containing("k");
//   auto lease = cut.lock->try_acquire("k", owned_by("me"));  // the reply is lost, then retried
//
// Thread-safety: the proxy may be driven from any thread; the lock and pool as dblock's own.
#pragma once

#include <memory>

#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"
#include "dblock/url.hpp"
#include "fault_proxy.hpp"
#include "strategies.hpp"

namespace dblock::testing {

struct CutOffLock {
  // A proxy in front of the server `direct` names, a pool of `options` through it, and a lock of
  // `strategy` over that pool with dblock's tables under `tables`.
  CutOffLock(const DatabaseUrl& direct, PoolOptions options, const StrategyUnderTest& strategy,
             const TableNames& tables);

  // Forwards again and closes every proxied connection: a statement hung in the blackhole fails,
  // and the server ends the sessions (and their transactions and session locks) it kept.
  void heal();

  FaultProxy proxy;
  std::unique_ptr<Pool> pool;  // every connection through `proxy`
  std::unique_ptr<Lock> lock;  // over `pool`
};

}  // namespace dblock::testing
