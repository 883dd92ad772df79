// SPDX-License-Identifier: Apache-2.0
#include "one_session_lock.hpp"

#include <chrono>
#include <thread>

#include "dblock/open.hpp"

namespace dblock::testing {

OneSessionLock::OneSessionLock(const Backend& backend_of_test, const StrategyUnderTest& strategy,
                               const TableNames& tables)
    : backend(backend_of_test),
      pool(open_pool(backend.url(), {.max_size = 1})),
      lock(strategy.make(*pool, tables)) {}

std::int64_t OneSessionLock::session() const {
  auto c = pool->acquire();
  return backend.session_id(*c);
}

void OneSessionLock::kill(Connection& killer) const {
  backend.kill_session(killer, session());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the server end it
}

}  // namespace dblock::testing
