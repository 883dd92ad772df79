// SPDX-License-Identifier: Apache-2.0
// The ground truth of the model test: the lock table's rows read straight with SQL on a
// connection of the test's own, with each row's remaining time measured on the database clock.
//
// Thread-safety: read_truth uses the connection it is given (one thread at a time); Truth is a
// plain value.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/owner.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

using ModelClock = std::chrono::steady_clock;

struct TruthRow {
  std::string key;
  std::string lease_id;
  Owner owner;
  std::int64_t hold_count = 0;
  std::int64_t fencing_token = 0;
  bool forever = false;  // a claim: expires_at is infinity (PostgreSQL) or 9999-12-31 (MySQL)
  // expires_at minus the server's clock when the row was read; negative once expired.
  std::int64_t remaining_ms = 0;
};

struct Truth {
  std::map<std::string, TruthRow> rows;  // by key
  // The read's round trip on this process's steady clock: the server's clock was read between.
  ModelClock::time_point from{};
  ModelClock::time_point to{};

  const TruthRow* find(const std::string& key) const {
    auto it = rows.find(key);
    return it == rows.end() ? nullptr : &it->second;
  }
  // When `row` expires on the server, as a window of this process's steady clock.
  ModelClock::time_point earliest_expiry(const TruthRow& row) const {
    return from + std::chrono::milliseconds(row.remaining_ms);
  }
  ModelClock::time_point latest_expiry(const TruthRow& row) const {
    return to + std::chrono::milliseconds(row.remaining_ms + 1);
  }
};

// Every row of `tables`' lock table.
Truth read_truth(Connection& conn, const TableNames& tables);

}  // namespace dblock::testing
