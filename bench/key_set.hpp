// SPDX-License-Identifier: Apache-2.0
// Keys for the transactional strategies' uncontended runs: each load thread owns a fixed set of
// keys and locks a random one of them per operation, so no two threads ever want the same key.
// The strategies create a key's row (row_locks / versions) on first use; prepare() makes every
// row exist before anything is timed, so dblock and the raw loop measure the same statements.
//
// Thread-safety: immutable after prepare(); pick() uses a per-thread generator.
#pragma once

#include <string>
#include <vector>

#include "dblock/lock.hpp"

namespace dblock::bench {

class KeySet {
 public:
  KeySet(const std::string& prefix, int threads, int keys_per_thread);
  // Acquires and releases every key once through `lock` (which creates its rows and, for the
  // row lock, remembers them), so the measured runs send only the lock statements.
  void prepare(Lock& lock) const;
  // A random key of thread `thread`'s own set.
  const std::string& pick(int thread) const;

 private:
  std::vector<std::vector<std::string>> keys_;
};

}  // namespace dblock::bench
