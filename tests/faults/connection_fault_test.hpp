// SPDX-License-Identifier: Apache-2.0
// The fixture of scenarios 3, 4 and 6 (connection_faults_test.cpp), and the analogues of those
// scenarios for the transactional strategies (transactional_connection_faults.cpp), for
// session locks (session_connection_faults.cpp) and for strategies that are not reentrant
// (nonreentrant_connection_faults.cpp): a lease that is a server transaction or a server
// session ends with its connection, so where the unique-key lock retries and recognises its own
// lease, a row lock, an optimistic lease or a session lock reports the lease lost (a
// transaction also keeps nothing of the critical section), and the next acquire takes a fresh
// connection. A semaphore's permit is retried and recognised like a unique-key lease, but the
// owner's next acquire takes a permit of its own instead of re-entering.
//
// Thread-safety: as GoogleTest fixtures.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "fault_fixture.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {

class ConnectionFaultTest : public FaultTest {
 protected:
  // Tries `taker` as fast as it can, for up to 5 s, until it gets its key; returns whether
  // `lease` already reported lost() at that moment (nullopt: the key never came free).
  static std::optional<bool> lost_when_key_taken(RecordedHolder& taker, const Lease& lease);
  // For a lease whose session the server ended: renew() says no, lost() yes, and release()
  // throws kLeaseLost. The release goes to `history` as `client`'s, one that got no reply.
  static void expect_ended(Lease& lease, HistoryWriter& history, const std::string& client);
  // After a fault: `client` takes `key` through `lock` within `wait` (else the failure says
  // `if_not`) and releases it. Returns the lease's token (0 when the key never came).
  static std::int64_t take_and_release(Lock& lock, HistoryWriter& history,
                                       const std::string& client, const std::string& key,
                                       std::chrono::milliseconds wait, const char* if_not);
  // The same for a transactional strategy, with the lease's transaction adding one to the
  // resource counter, which must read `counter_after` once it is released.
  void take_and_commit(Lock& lock, HistoryWriter& history, const std::string& client,
                       const std::string& key, std::int64_t counter_after, const char* if_not);

  // The session (other than conn_'s and `not_this`) whose statement on this test's table
  // `table` waits for a lock, once one does (up to 10 s); -1 if none appears. On MySQL the
  // statement must also match `mysql_like` (processlist shows idle transactions' last one too),
  // on PostgreSQL `pg_like`.
  std::int64_t blocked_session(const std::string& table, const std::string& mysql_like,
                               std::int64_t not_this = -1, const std::string& pg_like = "%");

  // Scenario 3, transactional: the session of a held lease is killed (mid-hold) or the session
  // of an acquire waiting for a lock is (mid-acquire).
  void transactional_session_killed_mid_hold();
  void transactional_session_killed_mid_acquire();
  // Scenario 4 for a reentrant TTL lock: the replies of an acquire, of an inner release and of the
  // last release are lost, and each retry is recognised; `outer_token` is the outer lease's. Then
  // another owner takes the key and releases it.
  void reentrant_replies_lost(std::int64_t& outer_token);
  // Scenario 4, transactional: the reply of the acquire's lock statement is lost; the reply of
  // the release's compare-and-set (optimistic) or COMMIT is lost.
  void transactional_acquire_reply_lost();
  void transactional_release_reply_lost();
  // Scenario 6, transactional: the holder's network stops answering (the proxy blackhole).
  void transactional_holder_blackholed();

  // Session locks. The server's own view of a key's session lock, computed by the server from
  // the key as the strategy does (SHA-256 over schema, prefix and key): the lock's bigint as
  // text (PostgreSQL) or its GET_LOCK name (MySQL), which the lock statements carry as a
  // parameter; and the session holding it (0: free).
  std::string session_lock_name(const std::string& key);
  std::int64_t session_holding(const std::string& key);
  // Waits (up to 10 s) until session `id` waits for a lock; false if it never does.
  bool waits_for_lock(std::int64_t id);
  // The analogues of scenarios 3, 4 and 6 for session locks.
  void session_killed_mid_hold();
  void session_killed_mid_acquire();
  void session_acquire_reply_lost();
  void session_release_reply_lost();
  void session_holder_blackholed();

  // The analogues of scenario 4's lost replies for strategies that are not reentrant.
  void nonreentrant_acquire_reply_lost();
  void nonreentrant_acquire_replies_all_lost();
};

}  // namespace dblock::testing
