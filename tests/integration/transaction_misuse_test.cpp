// SPDX-License-Identifier: Apache-2.0
// The transaction rules every driver shares, with the same words on every database x driver pair:
// misuse (commit without begin, begin twice) and a lost connection are refused without asking the
// server, a failed statement dooms a PostgreSQL transaction but not a MySQL one, and a connection
// found lost has no transaction open.
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "backends.hpp"
#include "dblock/table_names.hpp"
#include "thrown.hpp"

namespace dblock::testing {
namespace {

class TransactionMisuseTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    conn_ = backend().connect();
    table_ = quote_identifier(backend().dialect, unique_name("tx"));
    std::string key_type = backend().dialect == Dialect::kPostgreSQL ? "text" : "VARCHAR(64)";
    conn_->execute("CREATE TABLE " + table_ + " (k " + key_type + " NOT NULL PRIMARY KEY)");
  }
  void TearDown() override {
    auto c = backend().connect();
    c->execute("DROP TABLE IF EXISTS " + table_);
  }
  const Backend& backend() const { return GetParam(); }

  void insert(Connection& c, const std::string& key) {
    c.execute("INSERT INTO " + table_ + " (k) VALUES (" + backend().param(1) + ")", {Value(key)});
  }
  bool has(const std::string& key) {
    auto other = backend().connect();
    return !other
                ->execute("SELECT k FROM " + table_ + " WHERE k = " + backend().param(1),
                          {Value(key)})
                .empty();
  }

  static void expect_error(const std::optional<Error>& e, ErrorCode code, std::string_view text) {
    ASSERT_TRUE(e.has_value()) << "no error; expected: " << text;
    EXPECT_EQ(e->code(), code) << e->what();
    EXPECT_NE(std::string_view(e->what()).find(text), std::string_view::npos) << e->what();
  }

  std::unique_ptr<Connection> conn_;
  std::string table_;
};

TEST_P(TransactionMisuseTest, MisuseIsRefusedInTheSameWordsAndLeavesTheConnectionUsable) {
  expect_error(error_of([&] { conn_->commit(); }), ErrorCode::kFailedPrecondition,
               "commit() called without an open transaction");
  conn_->begin();
  insert(*conn_, "kept");
  expect_error(error_of([&] { conn_->begin(); }), ErrorCode::kFailedPrecondition,
               "begin() called while a transaction is open");
  EXPECT_TRUE(conn_->in_transaction());  // the open transaction goes on
  conn_->commit();
  EXPECT_FALSE(conn_->in_transaction());
  EXPECT_TRUE(has("kept"));
  conn_->rollback();  // nothing open: nothing happens
  EXPECT_FALSE(conn_->broken());
}

TEST_P(TransactionMisuseTest, AFailedStatementDoomsOnlyAPostgreSQLTransaction) {
  insert(*conn_, "taken");
  conn_->begin();
  insert(*conn_, "first");
  expect_error(error_of([&] { insert(*conn_, "taken"); }), ErrorCode::kUniqueViolation, "");
  EXPECT_TRUE(conn_->in_transaction());
  if (backend().dialect == Dialect::kPostgreSQL) {
    // The server would answer COMMIT with a silent ROLLBACK: commit() says so.
    expect_error(error_of([&] { conn_->commit(); }), ErrorCode::kFailedPrecondition,
                 "commit() after a statement in the transaction failed: rolled back instead");
    EXPECT_FALSE(has("first"));
  } else {
    // MySQL keeps the transaction open after a failed statement: the rest commits.
    conn_->commit();
    EXPECT_TRUE(has("first"));
  }
  EXPECT_FALSE(conn_->in_transaction());
  EXPECT_FALSE(conn_->broken());

  // A statement that succeeds after the failure (ROLLBACK TO SAVEPOINT) lets the commit through.
  conn_->begin();
  conn_->execute("SAVEPOINT before_taken");
  expect_error(error_of([&] { insert(*conn_, "taken"); }), ErrorCode::kUniqueViolation, "");
  conn_->execute("ROLLBACK TO SAVEPOINT before_taken");
  insert(*conn_, "second");
  conn_->commit();
  EXPECT_TRUE(has("second"));
}

TEST_P(TransactionMisuseTest, ALostConnectionHasNoTransactionAndRefusesInTheSameWords) {
  auto victim = backend().connect();
  victim->begin();
  insert(*victim, "never");
  backend().kill_session(*conn_, backend().session_id(*victim));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_error(error_of([&] { insert(*victim, "after"); }), ErrorCode::kConnectionLost, "");
  EXPECT_TRUE(victim->broken());
  EXPECT_FALSE(victim->in_transaction());
  const std::string_view known = "the connection is closed or was lost earlier";
  expect_error(error_of([&] { victim->execute("SELECT 1"); }), ErrorCode::kConnectionLost, known);
  expect_error(error_of([&] { victim->begin(); }), ErrorCode::kConnectionLost, known);
  expect_error(error_of([&] { victim->commit(); }), ErrorCode::kConnectionLost, known);
  victim->rollback();  // never throws
  EXPECT_FALSE(has("never"));
}

INSTANTIATE_TEST_SUITE_P(Pairs, TransactionMisuseTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
