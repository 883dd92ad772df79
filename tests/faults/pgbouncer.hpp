// SPDX-License-Identifier: Apache-2.0
// A PgBouncer of the test's own (the Debian package), in transaction-pooling mode on a free
// loopback port, in front of the PostgreSQL server a URL points at. Its files live in a
// temporary directory that goes with it.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dblock/url.hpp"
#include "process.hpp"

namespace dblock::testing {

class PgBouncer {
 public:
  // Throws std::runtime_error saying what is missing (the pgbouncer binary: run
  // scripts/install-deps.sh) or what failed (with PgBouncer's log).
  explicit PgBouncer(const DatabaseUrl& server, int pool_size = 4);
  ~PgBouncer();  // shuts PgBouncer down and removes its directory
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  // `server` with host and port replaced by PgBouncer's and ?pool_mode=transaction set.
  DatabaseUrl through(DatabaseUrl server) const;
  int port() const { return port_; }
  // The server-side process ids of PgBouncer's server connections (SHOW SERVERS on its admin
  // console, as `admin`, whose password it knows).
  std::vector<std::int64_t> server_pids(const DatabaseUrl& admin) const;

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace dblock::testing
