// The lock strategies the fault suite runs its scenarios against. Each scenario takes a
// strategy from this list, so a new strategy joins every scenario by adding one entry here (and
// its expectations where they differ, e.g. ends_with_ttl).
//
// Thread-safety: the list is built once and read-only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dblock/connection_source.hpp"
#include "dblock/lock.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

struct StrategyUnderTest {
  std::string name;  // "unique_key": part of test names and the worker's first argument
  // Builds the strategy over `source`, with dblock's tables under `tables`.
  std::function<std::unique_ptr<Lock>(ConnectionSource& source, const TableNames& tables)> make;
  // True when a dead holder's lease lasts until its TTL runs out (a lock row); false when the
  // server ends it with the holder's connection (a row lock held by a transaction).
  bool ends_with_ttl = true;
};

// Every strategy the scenarios cover. Row locks and optimistic updates are still to be added.
const std::vector<StrategyUnderTest>& fault_strategies();

// The entry called `name`; throws std::runtime_error for an unknown name.
const StrategyUnderTest& strategy_named(const std::string& name);

}  // namespace dblock::testing
