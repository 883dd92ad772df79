// SPDX-License-Identifier: Apache-2.0
// Owners, claim ids and the owner columns of row locks compare byte for byte on every database x
// driver pair: "w" and "w " are two owners, not one. On MySQL/MariaDB these columns were
// utf8mb4_bin VARCHARs (PAD SPACE, trailing spaces ignored) until migration 0003 made them
// VARBINARY; the upgrade test applies the migrations before it, writes rows as the library of
// that schema did, applies the rest and checks that the rows are kept and now compare byte-wise.
#include <algorithm>

#include "backends.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

LockOptions as(const std::string& owner) {
  LockOptions o;
  o.owner = Owner::named(owner);
  o.ttl = milliseconds(60000);
  o.auto_renew = false;
  return o;
}

class LookAlikeOwnersTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    tables_ = TableNames(unique_name("o") + "_");
    pool_ = open_pool(backend().url(), {.max_size = 4});
  }
  void TearDown() override {
    auto c = backend().connect();
    backend().drop_tables_with_prefix(*c, tables_.prefix());
  }
  const Backend& backend() const { return GetParam(); }
  void migrate_all() { Migrator(*pool_->acquire(), tables_).up(); }
  std::unique_ptr<UniqueKeyLock> make_lock() {
    UniqueKeyLockOptions options;
    options.tables = tables_;
    return std::make_unique<UniqueKeyLock>(*pool_, std::move(options));
  }
  std::vector<LockRow> rows() { return list_locks(*pool_->acquire(), tables_); }
  // How many row_locks rows have `key` and exactly this owner_thread, as the server compares.
  std::int64_t row_locks_with_thread(const std::string& key, const std::string& thread) {
    auto r = pool_->acquire()->execute(
        "SELECT COUNT(*) AS n FROM " + tables_.qualified(backend().dialect, "row_locks") +
            " WHERE lock_key = " + backend().param(1) + " AND owner_thread = " + backend().param(2),
        {Value(key), Value(thread)});
    return r.int64_at(0, "n");
  }

  TableNames tables_;
  std::unique_ptr<Pool> pool_;
};

TEST_P(LookAlikeOwnersTest, OwnersDifferingByATrailingSpaceDoNotReenterEachOther) {
  migrate_all();
  auto lock = make_lock();
  auto w = lock->try_acquire("k", as("w"));
  ASSERT_TRUE(w);
  EXPECT_FALSE(lock->try_acquire("k", as("w "))) << "\"w \" re-entered the lock of \"w\"";
  EXPECT_FALSE(lock->try_acquire("k", as("w  ")));
  auto spaced = lock->try_acquire("k2", as("w "));
  ASSERT_TRUE(spaced);
  EXPECT_FALSE(lock->try_acquire("k2", as("w"))) << "\"w\" re-entered the lock of \"w \"";

  // The owner columns read back with their trailing space.
  auto listed = rows();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].owner_thread, "name:w");
  EXPECT_EQ(listed[0].hold_count, 1);
  EXPECT_EQ(listed[1].owner_thread, "name:w ");
  EXPECT_EQ(listed[1].hold_count, 1);

  // Each owner's release frees its own key only.
  EXPECT_EQ(spaced->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(w->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(lock->try_acquire("k", as("w ")));
}

TEST_P(LookAlikeOwnersTest, ClaimIdsDifferingByATrailingSpaceAreDifferentClaims) {
  migrate_all();
  auto lock = make_lock();
  ClaimOptions first;
  first.claim_id = "order-1";
  ClaimOptions look_alike;
  look_alike.claim_id = "order-1 ";
  auto claimed = lock->claim("voucher", first);
  ASSERT_TRUE(claimed);
  EXPECT_FALSE(lock->claim("voucher", look_alike))
      << "claim id \"order-1 \" passed for \"order-1\"";
  auto retry = lock->claim("voucher", first);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->fencing_token, claimed->fencing_token);

  // The other way round: a claim id with the trailing space, tried without it.
  ASSERT_TRUE(lock->claim("voucher-2", look_alike));
  EXPECT_FALSE(lock->claim("voucher-2", first));
  auto listed = rows();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].lease_id, "order-1");
  EXPECT_EQ(listed[1].lease_id, "order-1 ");
}

// Rows written under the schema before migration 0003 (on PostgreSQL, which has no 0003, the
// same schema) survive the rest of the migrations unchanged, and compare byte-wise afterwards.
TEST_P(LookAlikeOwnersTest, UpgradeKeepsRowsAndMakesOwnersByteExact) {
  auto builtin = builtin_migrations(backend().dialect);
  std::vector<Migration> before;
  std::copy_if(builtin.begin(), builtin.end(), std::back_inserter(before),
               [](const Migration& m) { return m.version <= 2; });
  ASSERT_EQ(before.size(), 2u);
  Migrator(*pool_->acquire(), tables_, before).up();

  // The rows as the library of that schema wrote them (this library needs every migration, so
  // they are written directly): "w" holding "k" twice, with metadata, and a claim.
  const Owner w_owner = *as("w").owner;
  const bool pg = backend().dialect == Dialect::kPostgreSQL;
  const std::string now = pg ? "clock_timestamp()" : "UTC_TIMESTAMP(6)";
  {
    auto c = pool_->acquire();
    const std::string insert =
        "INSERT INTO " + tables_.qualified(backend().dialect, "locks") +
        " (lock_key, lease_id, owner_host, owner_process, owner_thread, hold_count,"
        " fencing_token, acquired_at, expires_at, metadata) VALUES (" +
        backend().param(1) + ", " + backend().param(2) + ", " + backend().param(3) + ", " +
        backend().param(4) + ", " + backend().param(5) + ", " + backend().param(6) + ", " +
        backend().param(7) + ", " + now + ", " + backend().param(8) +
        (pg ? "::timestamptz, " + backend().param(9) + "::jsonb)"
            : ", " + backend().param(9) + ")");
    c->execute(insert, {Value("k"), Value("lease-w"), Value(w_owner.host), Value(w_owner.process),
                        Value(w_owner.thread), Value(2), Value(1000), Value("2999-01-01 00:00:00"),
                        Value(R"({"job": "nightly", "n": 3})")});
    c->execute(insert,
               {Value("voucher"), Value("order-1"), Value(w_owner.host), Value(w_owner.process),
                Value("claim:" + w_owner.thread), Value(1), Value(1001),
                Value(pg ? "infinity" : "9999-12-31 23:59:59.999999"), Value()});
  }
  // A row-lock row as an acquisition by "w" stamps it.
  {
    auto c = pool_->acquire();
    c->execute("INSERT INTO " + tables_.qualified(backend().dialect, "row_locks") +
                   " (lock_key, owner_host, owner_process, owner_thread, fencing_token, used_at)"
                   " VALUES ('row-k', " +
                   backend().param(1) + ", " + backend().param(2) + ", " + backend().param(3) +
                   ", 1, " + now + ")",
               {Value(w_owner.host), Value(w_owner.process), Value(w_owner.thread)});
  }
  auto listed_before = rows();
  ASSERT_EQ(listed_before.size(), 2u);

  migrate_all();
  Migrator(*pool_->acquire(), tables_).verify();

  auto listed_after = rows();
  ASSERT_EQ(listed_after.size(), listed_before.size());
  for (std::size_t i = 0; i < listed_after.size(); ++i) {
    const LockRow& a = listed_before[i];
    const LockRow& b = listed_after[i];
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(b.lease_id, a.lease_id);
    EXPECT_EQ(b.owner_host, a.owner_host);
    EXPECT_EQ(b.owner_process, a.owner_process);
    EXPECT_EQ(b.owner_thread, a.owner_thread);
    EXPECT_EQ(b.hold_count, a.hold_count);
    EXPECT_EQ(b.fencing_token, a.fencing_token);
    EXPECT_EQ(b.acquired_at, a.acquired_at);
    EXPECT_EQ(b.expires_at, a.expires_at);
    EXPECT_EQ(b.metadata, a.metadata);
  }
  EXPECT_EQ(listed_after[0].key, "k");
  EXPECT_EQ(listed_after[0].owner_thread, "name:w");
  EXPECT_EQ(listed_after[0].hold_count, 2);
  EXPECT_NE(listed_after[0].metadata.find("nightly"), std::string::npos);
  EXPECT_EQ(listed_after[1].lease_id, "order-1");

  // The kept rows now compare byte-wise.
  auto lock = make_lock();
  EXPECT_FALSE(lock->try_acquire("k", as("w "))) << "\"w \" re-entered the kept lock of \"w\"";
  ClaimOptions look_alike;
  look_alike.claim_id = "order-1 ";
  EXPECT_FALSE(lock->claim("voucher", look_alike));
  EXPECT_EQ(row_locks_with_thread("row-k", "name:w"), 1);
  EXPECT_EQ(row_locks_with_thread("row-k", "name:w "), 0);

  // And the holder still holds the converted row: it re-enters it, with its token. No lease of
  // this process accounts for the two holds the row carried, so the release gives them back too
  // (as for holds of acquires whose reply was lost), and the key is free.
  auto reentered = lock->try_acquire("k", as("w"));
  ASSERT_TRUE(reentered);
  EXPECT_EQ(reentered->fencing_token(), 1000);
  EXPECT_EQ(reentered->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(lock->try_acquire("k", as("w ")));
}

INSTANTIATE_TEST_SUITE_P(Pairs, LookAlikeOwnersTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
