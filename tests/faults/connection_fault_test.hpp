// The fixture of scenarios 3, 4 and 6 (connection_faults_test.cpp), and the analogues of those
// scenarios for the transactional strategies (transactional_connection_faults.cpp): a lease
// that is a server transaction ends with its connection, so where the unique-key lock retries
// and recognises its own lease, a row lock or an optimistic lease reports the connection lost,
// keeps nothing of the critical section, and leaves the next acquire a fresh connection.
//
// Thread-safety: as GoogleTest fixtures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dblock/lock_table.hpp"
#include "fault_fixture.hpp"

namespace dblock::testing {

class ConnectionFaultTest : public FaultTest {
 protected:
  std::optional<LockRow> row(const std::string& key);

  // The session (other than conn_'s and `not_this`) whose statement on this test's table
  // `table` waits for a lock, once one does (up to 10 s); -1 if none appears. On MySQL the
  // statement must also match `mysql_like` (processlist shows idle transactions' last one too).
  std::int64_t blocked_session(const std::string& table, const std::string& mysql_like,
                               std::int64_t not_this = -1);

  // Scenario 3, transactional: the session of a held lease is killed (mid-hold) or the session
  // of an acquire waiting for a lock is (mid-acquire).
  void transactional_session_killed_mid_hold();
  void transactional_session_killed_mid_acquire();
  // Scenario 4, transactional: the reply of the acquire's lock statement is lost; the reply of
  // the release's compare-and-set (optimistic) or COMMIT is lost.
  void transactional_acquire_reply_lost();
  void transactional_release_reply_lost();
  // Scenario 6, transactional: the holder's network stops answering (the proxy blackhole).
  void transactional_holder_blackholed();
};

}  // namespace dblock::testing
