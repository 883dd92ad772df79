// SPDX-License-Identifier: Apache-2.0
// The semaphore tables' permit, taken and given back by the raw baseline as detail::SemaphoreCore
// does it (lib/src/semaphore/semaphore.cpp), with PermitSql's statements: PostgreSQL's one acquire
// statement; MySQL's slots, a free slot of the range picked at random client-side, then
// acquire_slot. Shared by the semaphore and reader-writer lock scenarios.
//
// Thread-safety: a RawClient is one thread's; the functions keep no state of their own beyond a
// thread-local random generator.
#pragma once

#include <cstdint>
#include <string>

#include "dblock/owner.hpp"
#include "lock_sql.hpp"
#include "raw_client.hpp"

namespace dblock::bench {

// One permit request: the key, its limit and the slots this acquire may take.
struct PermitAsk {
  const std::string& key;
  std::int64_t permits = 0;
  SlotRange range;
  const std::string& lease_id;
  const Owner& owner;
  std::int64_t ttl_ms = 0;
};

// Takes a permit; its fencing token, or 0 when none was taken (the range was full or blocked, or
// a concurrent acquire took the slot picked). Throws std::runtime_error when the key's stored
// limit is not `ask.permits` (the scenario stores it before timing).
std::int64_t raw_take_permit(RawClient& client, const PermitSql& sql, const PermitAsk& ask);

// Gives the permit of `token` back, with a fresh release id as Semaphore makes it; true when it
// was held.
bool raw_release_permit(RawClient& client, const PermitSql& sql, const std::string& key,
                        const Owner& owner, std::int64_t token, const std::string& lease_id);

// `statement` (live_in_shared or live_in_exclusive): the live permits of `key` in slots `first`
// to `last`.
std::int64_t raw_live_in(RawClient& client, const PermitSql& sql, const std::string& key,
                         std::int64_t first, std::int64_t last,
                         detail::Statement PermitSql::*statement);

}  // namespace dblock::bench
