// SPDX-License-Identifier: Apache-2.0
// A connection pool for the model and fault tests whose sessions the test can kill on the server,
// and whose new connections it can refuse for a while (an outage), without touching any other
// session on the server: other tests run against the same servers at the same time.
//
// PostgreSQL sessions are found by an application_name unique to the pool; MySQL/MariaDB
// sessions by the connection ids recorded when they were opened (MySQL never reuses one).
//
// Thread-safety: pool() may be used from many threads (the lock's renewer and listener open
// connections through it); kill_sessions() and refuse_connections() from the test thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends.hpp"
#include "dblock/connection_source.hpp"

namespace dblock::testing {

class TaggedPool {
 public:
  TaggedPool(const Backend& backend, std::size_t max_size);

  Pool& pool() { return *pool_; }

  // Kills every session this pool has opened, from `killer` (a connection of its own), and waits
  // until the server has ended them, so no statement sent afterwards can run on one. Returns how
  // many sessions were killed.
  int kill_sessions(Connection& killer);

  // While true, opening a connection through the pool throws Error(kConnectFailed), as when the
  // server cannot be reached.
  void refuse_connections(bool refuse) { state_->refuse = refuse; }

 private:
  struct State {
    Backend backend;
    std::string tag;  // PostgreSQL application_name
    std::atomic<bool> refuse{false};
    std::mutex mu;
    std::vector<std::int64_t> mysql_ids;  // MySQL: sessions opened and not yet killed
  };

  std::shared_ptr<State> state_;  // shared with the pool's factory
  std::unique_ptr<Pool> pool_;
};

}  // namespace dblock::testing
