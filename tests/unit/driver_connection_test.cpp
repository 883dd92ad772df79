// SPDX-License-Identifier: Apache-2.0
// DriverConnection's transaction state machine, over a driver whose primitives are scripted.
#include "drivers/driver_connection.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dblock::detail {
namespace {

// A driver whose primitives are scripted: each statement is recorded and answered by `answer`
// (which may throw); the hooks return what the test sets.
class ScriptedConnection final : public DriverConnection {
 public:
  explicit ScriptedConnection(Dialect dialect)
      : DriverConnection("Test 127.0.0.1:1/db", "secret"), dialect_(dialect) {}

  Dialect dialect() const noexcept override { return dialect_; }
  std::string describe() const override { return where() + " (scripted)"; }

  std::vector<std::string> sent;
  std::function<void(std::string_view)> answer = [](std::string_view) {};
  bool open = true;
  bool ends_transaction = false;  // server_ended_transaction() answers this
  bool doubtful = false;          // commit_in_doubt() answers this

  // From now on, `statement` fails with `code`; every other statement succeeds.
  void fail_on(std::string statement, ErrorCode code) {
    answer = [statement, code](std::string_view sql) {
      if (sql == statement) throw Error(code, "scripted failure");
    };
  }

 private:
  Result run_statement(std::string_view sql, std::span<const Value>) override {
    sent.emplace_back(sql);
    answer(sql);
    return {};
  }
  bool native_open() const noexcept override { return open; }
  bool server_ended_transaction(const Error*) noexcept override { return ends_transaction; }
  bool commit_in_doubt() noexcept override { return doubtful; }

  Dialect dialect_;
};

std::optional<ErrorCode> code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

Error failure(ErrorCode code) { return Error(code, "scripted failure"); }

// Begins a transaction on `c` and sends `statement`, scripted to fail with `code`: the code it
// threw.
std::optional<ErrorCode> fail_in_transaction(ScriptedConnection& c, const std::string& statement,
                                             ErrorCode code) {
  c.begin();
  c.fail_on(statement, code);
  return code_of([&] { c.execute(statement); });
}

TEST(DriverConnection, SendsTheDialectsTransactionStatements) {
  ScriptedConnection pg(Dialect::kPostgreSQL);
  pg.begin();
  EXPECT_TRUE(pg.in_transaction());
  pg.commit();
  pg.begin();
  pg.rollback();
  EXPECT_FALSE(pg.in_transaction());
  EXPECT_EQ(pg.sent, (std::vector<std::string>{"BEGIN", "COMMIT", "BEGIN", "ROLLBACK"}));

  ScriptedConnection my(Dialect::kMySQL);
  my.begin();
  my.commit();
  EXPECT_EQ(my.sent, (std::vector<std::string>{"START TRANSACTION", "COMMIT"}));
}

TEST(DriverConnection, MisuseIsRefusedWithoutAStatement) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  EXPECT_EQ(code_of([&] { c.commit(); }), ErrorCode::kFailedPrecondition);
  c.begin();
  EXPECT_EQ(code_of([&] { c.begin(); }), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(c.in_transaction());
  EXPECT_EQ(c.sent, (std::vector<std::string>{"BEGIN"}));
  c.rollback();
  c.rollback();  // nothing open: nothing sent
  EXPECT_EQ(c.sent.size(), 2u);
}

TEST(DriverConnection, PostgreSQLCommitAfterAFailedStatementRollsBack) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  EXPECT_EQ(fail_in_transaction(c, "bad", ErrorCode::kUniqueViolation),
            ErrorCode::kUniqueViolation);
  EXPECT_EQ(code_of([&] { c.commit(); }), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(c.sent.back(), "ROLLBACK");
  EXPECT_FALSE(c.in_transaction());
  EXPECT_FALSE(c.broken());

  // A statement that succeeds after the failure (ROLLBACK TO SAVEPOINT) clears it.
  c.begin();
  EXPECT_EQ(code_of([&] { c.execute("bad"); }), ErrorCode::kUniqueViolation);
  c.execute("ROLLBACK TO SAVEPOINT s");
  c.commit();
  EXPECT_EQ(c.sent.back(), "COMMIT");
}

TEST(DriverConnection, MySQLCommitAfterAFailedStatementCommits) {
  ScriptedConnection c(Dialect::kMySQL);
  EXPECT_EQ(fail_in_transaction(c, "bad", ErrorCode::kUniqueViolation),
            ErrorCode::kUniqueViolation);
  c.commit();
  EXPECT_EQ(c.sent.back(), "COMMIT");
}

TEST(DriverConnection, ATransactionTheServerEndedRefusesStatementsUntilRolledBack) {
  ScriptedConnection c(Dialect::kMySQL);
  c.ends_transaction = true;
  EXPECT_EQ(fail_in_transaction(c, "victim", ErrorCode::kDeadlock), ErrorCode::kDeadlock);
  c.ends_transaction = false;
  EXPECT_FALSE(c.in_transaction());  // nothing holds its locks any more
  const std::size_t sent = c.sent.size();
  EXPECT_EQ(code_of([&] { c.execute("SELECT 1"); }), ErrorCode::kLeaseLost);
  EXPECT_EQ(c.sent.size(), sent);  // refused without sending
  EXPECT_EQ(code_of([&] { c.begin(); }), ErrorCode::kFailedPrecondition);  // rollback is due
  // commit() rolls back and reports the lost transaction.
  EXPECT_EQ(code_of([&] { c.commit(); }), ErrorCode::kLeaseLost);
  EXPECT_EQ(c.sent.back(), "ROLLBACK");
  c.execute("SELECT 1");

  // Ended by a statement that succeeded (an implicit commit), then rolled back by the caller.
  c.begin();
  c.ends_transaction = true;
  c.execute("CREATE TABLE t (i INT)");
  c.ends_transaction = false;
  EXPECT_FALSE(c.in_transaction());
  c.rollback();
  EXPECT_EQ(c.sent.back(), "ROLLBACK");
  c.execute("SELECT 1");
}

TEST(DriverConnection, ALostConnectionStaysBrokenWithNoTransaction) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  c.begin();
  c.answer = [](std::string_view) { throw failure(ErrorCode::kConnectionLost); };
  EXPECT_EQ(code_of([&] { c.execute("SELECT 1"); }), ErrorCode::kConnectionLost);
  EXPECT_TRUE(c.broken());
  EXPECT_FALSE(c.in_transaction());
  c.answer = [](std::string_view) {};
  const std::size_t sent = c.sent.size();
  EXPECT_EQ(code_of([&] { c.execute("SELECT 1"); }), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_of([&] { c.begin(); }), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_of([&] { c.commit(); }), ErrorCode::kConnectionLost);
  c.rollback();
  EXPECT_EQ(c.sent.size(), sent);  // nothing sent on a broken connection
}

TEST(DriverConnection, AClosedHandleIsBroken) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  c.begin();
  c.open = false;
  EXPECT_TRUE(c.broken());
  EXPECT_EQ(code_of([&] { c.execute("SELECT 1"); }), ErrorCode::kConnectionLost);
  EXPECT_FALSE(c.in_transaction());
  EXPECT_EQ(c.sent, (std::vector<std::string>{"BEGIN"}));
}

TEST(DriverConnection, AFailedRollbackOrAForeignExceptionBreaksTheConnection) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  c.begin();
  c.answer = [](std::string_view) { throw failure(ErrorCode::kOther); };
  c.rollback();  // never throws
  EXPECT_TRUE(c.broken());

  ScriptedConnection d(Dialect::kMySQL);
  d.answer = [](std::string_view) { throw std::bad_alloc(); };
  EXPECT_THROW(d.execute("SELECT 1"), std::bad_alloc);
  EXPECT_TRUE(d.broken());  // the protocol state is unknown
}

TEST(DriverConnection, ADoubtfulCommitIsCommitInDoubt) {
  ScriptedConnection c(Dialect::kPostgreSQL);
  c.begin();
  c.doubtful = true;
  EXPECT_EQ(code_of([&] { c.commit(); }), ErrorCode::kCommitInDoubt);
  EXPECT_FALSE(c.in_transaction());
  EXPECT_FALSE(c.broken());
}

}  // namespace
}  // namespace dblock::detail
