// SPDX-License-Identifier: Apache-2.0
#include "cut_off_lock.hpp"

#include "dblock/open.hpp"

namespace dblock::testing {

CutOffLock::CutOffLock(const DatabaseUrl& direct, PoolOptions options,
                       const StrategyUnderTest& strategy, const TableNames& tables)
    : proxy(direct.host, direct.effective_port()),
      pool(open_pool(proxy.through(direct), options)),
      lock(strategy.make(*pool, tables)) {}

void CutOffLock::heal() {
  proxy.set_blackhole(false);
  proxy.close_all();
}

}  // namespace dblock::testing
