// SPDX-License-Identifier: Apache-2.0
// The bad-input rows (bad_input.hpp) that every lock strategy answers alike, built in one place:
// a bad key given to try_acquire, a negative wait timeout, a lease released twice. A strategy's
// group of rows names its lock once and takes these rows, then adds the rows of its own.
//
//   const LockUnderTest kRowLock{"RowLock", "RowLock", [](BadInputContext& ctx) {
//     return std::make_unique<RowLock>(ctx.pool, RowLockOptions{ctx.tables});
//   }};
//   std::vector<BadInputCase> rows = bad_key_rows(kRowLock);  // RowLockEmptyKey, ...
//   rows.push_back(negative_timeout_row(kRowLock));            // RowLockNegativeTimeout
//
// Thread-safety: the rows are plain values.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bad_input.hpp"
#include "dblock/lock.hpp"

namespace dblock::testing {

// A lock strategy as its rows see it.
struct LockUnderTest {
  std::string prefix;  // of its rows' names: "RowLock" names "RowLockEmptyKey"
  std::string type;    // the class, for the inputs in the log: "RowLock"
  // The lock a row feeds its input to, made afresh from the row's context.
  std::function<std::unique_ptr<Lock>(BadInputContext&)> make;
};

// What an acquire returned, as a row's outcome: "acquired" or "not acquired".
std::string outcome(const std::optional<Lease>& lease);

// A key for the log: bytes outside printable ASCII as \xNN, a long key cut.
std::string shown(const std::string& key);

// try_acquire(`key`) refused: Error(kInvalidArgument) with `fragment` in its message.
BadInputCase bad_key_row(const LockUnderTest& lock, const std::string& name, std::string key,
                         std::string fragment);
// The keys no lock takes: empty, of 256 characters, not valid UTF-8.
std::vector<BadInputCase> bad_key_rows(const LockUnderTest& lock);
// acquire with a wait timeout of -1 ms: Error(kInvalidArgument), "use 0 for a single try".
BadInputCase negative_timeout_row(const LockUnderTest& lock);
// release() of a released lease: Error(kInvalidArgument) saying the handle is empty.
BadInputCase double_release_row(const LockUnderTest& lock);

}  // namespace dblock::testing
