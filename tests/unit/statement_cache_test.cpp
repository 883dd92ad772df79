// SPDX-License-Identifier: Apache-2.0
// The drivers' cache of prepared statements (drivers/statement_cache.hpp): the least recently
// used entry leaves first, and every entry that leaves (evicted, erased, cleared or destroyed
// with the cache) is closed exactly once.
#include "drivers/statement_cache.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dblock::detail {
namespace {

struct Record {
  std::vector<std::string>* closed;
  void operator()(const std::string& name) const { closed->push_back(name); }
};

TEST(StatementCache, TheLeastRecentlyUsedLeavesFirstAndEachLeaverIsClosedOnce) {
  std::vector<std::string> closed;
  {
    StatementCache<std::string, Record> cache(2, Record{&closed});
    cache.insert("SELECT 1", "s1");
    cache.insert("SELECT 2", "s2");
    ASSERT_NE(cache.find("SELECT 1"), nullptr);  // now the most recently used
    cache.insert("SELECT 3", "s3");              // full: "SELECT 2" leaves
    EXPECT_EQ(closed, std::vector<std::string>{"s2"});
    EXPECT_EQ(cache.find("SELECT 2"), nullptr);
    ASSERT_NE(cache.find("SELECT 3"), nullptr);
    EXPECT_EQ(*cache.find("SELECT 1"), "s1");
    cache.erase("SELECT 3");
    cache.erase("SELECT 3");  // gone already: nothing more is closed
    EXPECT_EQ(closed, (std::vector<std::string>{"s2", "s3"}));
    EXPECT_EQ(cache.size(), 1u);
  }
  EXPECT_EQ(closed, (std::vector<std::string>{"s2", "s3", "s1"}));  // destroyed with the cache
}

}  // namespace
}  // namespace dblock::detail
