// SPDX-License-Identifier: Apache-2.0
#include "migrated_fixture.hpp"

#include <utility>
#include <vector>

#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {

void MigratedTablesTest::SetUp() {
  tables_ = TableNames(unique_name("m") + "_");
  conn_ = backend().connect();
  Migrator(*conn_, tables_).up();
}

void MigratedTablesTest::TearDown() {
  auto c = backend().connect();
  backend().drop_tables_with_prefix(*c, tables_.prefix());
}

void MigratedPoolTest::SetUp() {
  tables_ = TableNames(unique_name(stem_) + "_");
  pool_ = open_pool(backend().url(), {.max_size = pool_size_});
  Migrator(*pool_->acquire(), tables_).up();
}

void MigratedPoolTest::TearDown() {
  auto c = backend().connect();
  backend().drop_tables_with_prefix(*c, tables_.prefix());
}

int MigratedPoolTest::rows_of_key(const std::string& base, const std::string& key) {
  auto c = pool_->acquire();
  const auto r =
      c->execute("SELECT count(*) AS n FROM " + tables_.qualified(backend().dialect, base) +
                     " WHERE lock_key = " + backend().param(1),
                 {Value(key)});
  return static_cast<int>(r.int64_at(0, "n"));
}

LockOptions MigratedPoolTest::as(const std::string& owner, std::chrono::milliseconds ttl,
                                 bool auto_renew) {
  LockOptions o;
  o.owner = Owner::named(owner);
  o.ttl = ttl;
  o.auto_renew = auto_renew;
  return o;
}

void MigratedPoolTest::release_by_operator(const std::string& key) {
  auto c = pool_->acquire();
  for (const LockRow& row : list_locks(*c, tables_)) {
    if (row.key == key) {
      ASSERT_TRUE(release_lock_row(*c, tables_, row)) << "the row of '" << key << "' changed";
      return;
    }
  }
  FAIL() << "no row of '" << key << "' to release";
}

void MigratedPoolTest::release_permit_by_operator(const std::string& key) {
  auto c = pool_->acquire();
  std::vector<PermitRow> permits;
  for (PermitRow& p : list_permits(*c, tables_, key)) {
    if (p.lock.key == key) permits.push_back(std::move(p));
  }
  ASSERT_EQ(permits.size(), 1u) << "permits of '" << key << "' to release";
  ASSERT_TRUE(release_permit_row(*c, tables_, permits[0]))
      << "the permit of '" << key << "' changed";
}

}  // namespace dblock::testing
