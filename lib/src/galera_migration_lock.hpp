// SPDX-License-Identifier: Apache-2.0
// The migrator's lock across the nodes of a Galera cluster. GET_LOCK, which serialises MySQL
// migrators, is node-local there, and two nodes running the same DDL at once is not only wasted
// work: MariaDB can leave one of them waiting forever (a CREATE VIEW killed by the other node's,
// stuck "Waiting to execute in isolation": once in 120 rounds of two nodes migrating at once).
// The lock is a row of the migrations table (version 0) that its holder inserts and deletes; a
// certified insert is exclusive across the nodes. A migrator that dies holding it leaves the row
// behind: after `stale_after` the next migrator deletes it and goes on. Internal.
//
// Example:
//   GaleraMigrationLock held(conn, names, std::chrono::seconds(600), std::chrono::seconds(300));
//   ... the migrations' DDL ...
//
// Thread-safety: like the Connection it is given.
#pragma once

#include <chrono>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::detail {

class GaleraMigrationLock {
 public:
  // Waits until this migrator holds the lock of the migrations table of `names` (which must
  // exist), for at most `wait`; throws Error(kLockWaitTimeout) past it.
  GaleraMigrationLock(Connection& conn, const TableNames& names, std::chrono::seconds wait,
                      std::chrono::seconds stale_after);
  // Deletes the holder's row (unless the connection broke: then it waits out `stale_after`).
  ~GaleraMigrationLock();
  GaleraMigrationLock(const GaleraMigrationLock&) = delete;
  GaleraMigrationLock& operator=(const GaleraMigrationLock&) = delete;

 private:
  Connection& conn_;
  const TableNames& names_;
  std::string holder_;  // 32 random hex digits, in the row's checksum column
};

}  // namespace dblock::detail
