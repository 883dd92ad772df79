// Reading the lock table for operators: who holds what (`dblock locks`).
//
// Thread-safety: the function uses the connection it is given (one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

struct LockRow {
  std::string key;
  std::string lease_id;
  std::string owner_host;
  std::string owner_process;
  std::string owner_thread;
  std::int64_t hold_count = 0;
  std::int64_t fencing_token = 0;
  std::string acquired_at;  // UTC, ISO 8601 with microseconds
  std::string expires_at;   // UTC, ISO 8601, or "never" for claims
  bool expired = false;     // by the database clock, now
  std::string metadata;     // JSON text, empty when none
};

// Every row that is held, or expired and not yet cleaned (released rows are left out), ordered
// by key.
std::vector<LockRow> list_locks(Connection& conn, const TableNames& tables = TableNames());

}  // namespace dblock
