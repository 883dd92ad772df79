// SPDX-License-Identifier: Apache-2.0
// The lock strategies the fault suite runs its scenarios against. Each scenario takes a
// strategy from this list, so a new strategy joins every scenario by adding one entry here. The
// entry's capability flags say what its leases promise; scenarios read the flags (never the
// name) to choose what they expect, and where the scenario means nothing for a strategy
// (a paused row-lock holder cannot outlive a TTL it does not have) they print one line saying
// why and check the strategy's own analogue instead:
//
//   unique_key  ends_with_ttl, exclusive,         a lock row; a dead holder's lease runs out;
//               hands_over                        a release hands the key to a waiter asleep
//   unique_key_fair  as unique_key, queues         the same with fair waiting (a queue table)
//   row_lock    exclusive, transactional          SELECT ... FOR UPDATE in the lease's
//                                                 transaction; the server frees it with the
//                                                 connection; no TTL
//   optimistic  transactional                     version compare-and-set at release; nobody
//                                                 waits or is excluded; correct when no update
//                                                 is lost (one commit per version read)
//   session_lock exclusive, no lock row           pg_advisory_lock / GET_LOCK held by the
//                                                 lease's own session, outside any
//                                                 transaction; the server frees it when the
//                                                 session ends; no TTL; tokens increase over
//                                                 every key
//   semaphore   ends_with_ttl, exclusive, not     a Semaphore with 1 permit: a permit row
//               reentrant, no kept release        (semaphore_permits) with a TTL; the owner's
//                                                 second acquire takes (here: waits for) a
//                                                 permit of its own; a release whose replies
//                                                 were all lost is not sent again: the permit
//                                                 ends by its TTL
//   rw_writer   as semaphore                      a ReadWriteLock's writer: slot 0 of the
//                                                 key's permits, then its readers drained
//
// Lock sets (lock_set.hpp) are no entry of their own: they take any strategy, so their scenarios
// (lock_set_faults_test.cpp) run over every entry here.
//
// Thread-safety: the list is built once and read-only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

struct StrategyUnderTest {
  std::string name;  // "unique_key": part of test names and the worker's first argument
  // Builds the strategy over `source`, with dblock's tables under `tables`.
  std::function<std::unique_ptr<Lock>(ConnectionSource& source, const TableNames& tables)> make;
  // True when a dead holder's lease lasts until its TTL runs out (a lock row); false when the
  // server ends it with the holder's connection (a transaction), and time alone never does.
  bool ends_with_ttl = true;
  // True when at most one lease of a key is held at a time (histories are checked for
  // overlaps); false for compare-and-set, where leases never exclude each other and histories
  // are checked for two commits from one version instead.
  bool exclusive = true;
  // True when a lease carries a transaction (Lease::connection()): the critical section writes
  // through it, release() commits those writes, and a lost connection rolls them back.
  bool transactional = false;
  // True when the strategy keeps one row per key in `table` (a scenario may look at it, block
  // it or delete it); false when the server knows the lock only in memory, by a hash of the key
  // (session locks), and `table` is empty.
  bool lock_row = true;
  // dblock's table (base name) that holds the strategy's one row per key.
  std::string table = "locks";
  // True when no fencing token is handed out twice over all keys, not only within one key
  // (histories are checked for a token held under two keys).
  bool global_tokens = false;
  // True when the owner's second acquire of a key it holds re-enters its hold (one row, hold
  // count 2, the inner release kDecremented); false when every acquire is a lease of its own
  // (a semaphore's permit: with one permit, the second acquire finds the key held).
  bool reentrant = true;
  // True when a release whose replies were all lost is kept and sent again first by the owner's
  // next acquire of the key (the unique-key lock); false when nothing is kept and the hold ends
  // by its TTL (a semaphore's permit) or with its session.
  bool resends_lost_release = false;
  // The strategy's rows of `table` as an operator lists them (lock_table.hpp): held ones and
  // expired ones not yet cleaned, released ones left out.
  std::function<std::vector<LockRow>(Connection& conn, const TableNames& tables)> list_rows =
      [](Connection& conn, const TableNames& tables) { return list_locks(conn, tables); };
  // True when a release hands the key straight to a waiter asleep in the same lock object, in
  // the release's own statement (the unique-key lock; with fair waiting, to the queue's head).
  bool hands_over = false;
  // True when waiters of any process queue (lock_waiters) and the key goes to the queue's head:
  // on PostgreSQL a release grants it to a live head in its own statement (the head's lease,
  // held until its TTL even if the head died); on MySQL/MariaDB the head takes it at its next
  // try, and a dead head holds the others back until its place expires (waiter_ttl).
  bool queues = false;

  // The lock lives in the server session itself, outside any transaction: it ends when the
  // session does (no TTL), and a transaction pooler, which lends the session to others between
  // transactions, cannot carry it.
  bool held_by_session() const { return !ends_with_ttl && !transactional; }
};

// Every strategy the scenarios cover.
const std::vector<StrategyUnderTest>& fault_strategies();

// The entry called `name`; throws std::runtime_error for an unknown name.
const StrategyUnderTest& strategy_named(const std::string& name);

}  // namespace dblock::testing
