// SPDX-License-Identifier: Apache-2.0
// A throwaway database server of the test's own, started with scripts/dev-db.sh in a fresh
// state directory, which the test may crash and restart without touching the servers other
// tests use.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "process.hpp"

namespace dblock::testing {

class PrivateServer {
 public:
  // Starts PostgreSQL or MariaDB (a few seconds). Throws std::runtime_error with dev-db.sh's
  // output when it cannot. With `url_env` (DBLOCK_TEST_PG_URL, ...), the server's URL stands in
  // that environment variable while the server lives, for the fixtures and worker processes that
  // read it; the previous value is put back at the end.
  explicit PrivateServer(Dialect dialect, std::string_view url_env = {});
  ~PrivateServer();  // stops the server, removes its directory, restores url_env
  PrivateServer(const PrivateServer&) = delete;
  PrivateServer& operator=(const PrivateServer&) = delete;

  // The URL of the server (user, password, port), as `scripts/dev-db.sh env` prints it.
  const std::string& url() const { return url_; }

  // Crashes the server with no chance to clean up (PostgreSQL: pg_ctl stop -m immediate;
  // MariaDB: SIGKILL), waits `down`, starts it again and returns once it accepts connections
  // (crash recovery done).
  void crash_and_restart(std::chrono::milliseconds down);

 private:
  std::string env(const std::string& name) const;
  // argv run as the server's OS user (through runuser when we are root).
  std::vector<std::string> as_server_user(std::vector<std::string> argv) const;
  void wait_until_it_answers() const;

  Dialect dialect_;
  std::string dir_;
  std::string script_;
  std::map<std::string, std::string> env_;
  std::string url_;
  std::string url_env_;
  std::string previous_url_;
  std::unique_ptr<ChildProcess> restarted_mariadbd_;
};

}  // namespace dblock::testing
