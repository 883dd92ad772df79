// SPDX-License-Identifier: Apache-2.0
#include "raw_permits.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

namespace dblock::bench {

namespace {

std::int64_t to_int(const std::optional<std::string>& text) {
  std::int64_t n = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), n);
  return n;
}

}  // namespace

std::int64_t raw_take_permit(RawClient& client, const PermitSql& sql, const PermitAsk& ask) {
  if (!sql.acquire.empty()) {
    // PostgreSQL, one statement: columns permits, free, slot, fencing_token.
    RawRows r = client.query(sql.acquire.sql(),
                             sql.acquire_params(sql.acquire, ask.key, ask.permits, ask.range,
                                                ask.lease_id, ask.owner, ask.ttl_ms));
    return r.empty() ? 0 : to_int(r[0][3]);
  }
  // MySQL: the key's slots, a free one of the range picked at random here, then its upsert.
  RawRows r =
      client.query(sql.slots.sql(), sql.acquire_params(sql.slots, ask.key, ask.permits, ask.range,
                                                       ask.lease_id, ask.owner, ask.ttl_ms));
  std::vector<bool> taken(static_cast<std::size_t>(ask.permits), false);
  std::optional<std::int64_t> limit, mine;
  for (const auto& row : r) {
    const std::string kind = row[0].value_or("");
    const std::int64_t n = to_int(row[1]);
    if (kind == "limit") {
      limit = n;
    } else if (kind == "mine") {
      mine = n;
    } else if (n >= 0 && n < ask.permits) {
      taken[static_cast<std::size_t>(n)] = true;
    }
  }
  if (limit != ask.permits) {
    throw std::runtime_error("bench: key " + ask.key + " has no limit of " +
                             std::to_string(ask.permits) + " stored");
  }
  const SlotRange& range = ask.range;
  const bool blocked = range.blocked_by >= 0 && taken[static_cast<std::size_t>(range.blocked_by)];
  std::vector<std::int64_t> free;
  for (std::int64_t s = range.first; !blocked && s <= std::min(range.last, ask.permits - 1); ++s) {
    if (!taken[static_cast<std::size_t>(s)]) free.push_back(s);
  }
  if (!mine && free.empty()) return 0;
  thread_local std::mt19937 rng{std::random_device{}()};
  const std::int64_t slot =
      mine ? *mine : free[std::uniform_int_distribution<std::size_t>(0, free.size() - 1)(rng)];
  RawResult a = client.execute(sql.acquire_slot.sql(),
                               sql.acquire_params(sql.acquire_slot, ask.key, ask.permits, range,
                                                  ask.lease_id, ask.owner, ask.ttl_ms, slot));
  return static_cast<std::int64_t>(a.insert_id);
}

bool raw_release_permit(RawClient& client, const PermitSql& sql, const std::string& key,
                        const Owner& owner, std::int64_t token, const std::string& lease_id) {
  RawResult r = client.execute(
      sql.release.sql(), sql.release_params(key, owner, token, lease_id, "r-" + random_key("")));
  return r.affected == 1;
}

std::int64_t raw_live_in(RawClient& client, const PermitSql& sql, const std::string& key,
                         std::int64_t first, std::int64_t last,
                         detail::Statement PermitSql::*statement) {
  return client.execute((sql.*statement).sql(), sql.live_in_params(key, first, last)).first;
}

}  // namespace dblock::bench
