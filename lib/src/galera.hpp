// SPDX-License-Identifier: Apache-2.0
// Galera clusters (MariaDB with wsrep on): recognising a node, and reading what other nodes
// committed. A commit on one node returns once the cluster has certified it, but the other nodes
// apply it a moment later, so a plain read on another node can miss it: after `migrate up` on
// node 1, `verify()` on node 3 could report a migration as not applied. CausalReads makes the
// reads of its scope wait until this node has applied everything certified before them
// (wsrep_sync_wait bit 1), and puts the session's own setting back afterwards. Internal.
//
// Thread-safety: like the Connection it is given.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "dblock/connection.hpp"

namespace dblock::detail {

// True on a Galera node (MariaDB with wsrep_on = ON); false on PostgreSQL, MySQL and a
// stand-alone MariaDB. One round trip on the MySQL dialect.
bool galera_node(Connection& conn);

// Whether the server behind a source is a Galera node, asked once (on the first connection the
// caller shows it) and remembered: what a strategy whose locks are node-local checks before its
// first lock.
class GaleraCheck {
 public:
  // Throws Error(kFailedPrecondition, refusal) when `conn` is on a Galera node (PostgreSQL
  // never is; it is not asked).
  void refuse_on_galera(Connection& conn, const std::string& refusal);

 private:
  std::atomic<int> known_{-1};  // -1 not asked yet, 0 no, 1 a Galera node
};

class CausalReads {
 public:
  // On a Galera node, turns causal reads on for the session; elsewhere does nothing.
  explicit CausalReads(Connection& conn);
  // Restores the session's previous wsrep_sync_wait (unless the connection broke meanwhile).
  ~CausalReads();
  CausalReads(const CausalReads&) = delete;
  CausalReads& operator=(const CausalReads&) = delete;

 private:
  Connection& conn_;
  std::optional<std::string> previous_;  // the session's value, when it was changed
};

}  // namespace dblock::detail
