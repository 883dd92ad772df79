// The unique-key lock's statements as dblock sends them: rendered from the dialect files
// (lib/src/sql/) through the same render path UniqueKeyLock uses, so the raw baseline can never
// drift from the library's SQL. Also the parameters, in the order the library binds them.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/owner.hpp"
#include "dblock/table_names.hpp"

namespace dblock::bench {

struct LockSql {
  LockSql(Dialect dialect, const TableNames& tables);

  std::vector<Value> acquire_params(const std::string& key, const std::string& lease_id,
                                    const Owner& owner, std::int64_t ttl_ms) const;
  std::vector<Value> release_params(const std::string& key, const Owner& owner,
                                    std::int64_t token) const;

  Dialect dialect;
  std::string acquire, release, channel;
};

// "prefix" + 32 random hex digits: a fresh key for an uncontended acquisition.
std::string random_key(const std::string& prefix);

}  // namespace dblock::bench
