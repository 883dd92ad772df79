#include "strategies.hpp"

#include <stdexcept>

#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {

const std::vector<StrategyUnderTest>& fault_strategies() {
  static const std::vector<StrategyUnderTest> all = {
      {"unique_key",
       [](ConnectionSource& source, const TableNames& tables) -> std::unique_ptr<Lock> {
         UniqueKeyLockOptions options;
         options.tables = tables;
         return std::make_unique<UniqueKeyLock>(source, options);
       },
       true},
      // Extension point: the row-lock and optimistic strategies go here once they exist.
  };
  return all;
}

const StrategyUnderTest& strategy_named(const std::string& name) {
  for (const auto& s : fault_strategies()) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("unknown lock strategy '" + name + "'");
}

}  // namespace dblock::testing
