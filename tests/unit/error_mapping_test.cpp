// SPDX-License-Identifier: Apache-2.0
#include "drivers/error_mapping.hpp"

#include <gtest/gtest.h>

namespace dblock::detail {
namespace {

TEST(Classify, Sqlstates) {
  EXPECT_EQ(code_from_sqlstate("23505"), ErrorCode::kUniqueViolation);
  EXPECT_EQ(code_from_sqlstate("55P03"), ErrorCode::kLockNotAvailable);
  EXPECT_EQ(code_from_sqlstate("40P01"), ErrorCode::kDeadlock);
  EXPECT_EQ(code_from_sqlstate("40001"), ErrorCode::kSerializationFailure);
  EXPECT_EQ(code_from_sqlstate("42P01"), ErrorCode::kUndefinedTable);
  EXPECT_EQ(code_from_sqlstate("28P01"), ErrorCode::kAccessDenied);
  EXPECT_EQ(code_from_sqlstate("08006"), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_from_sqlstate("57P01"), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_from_sqlstate("XX000"), ErrorCode::kOther);
}

TEST(Classify, MysqlErrnos) {
  EXPECT_EQ(code_from_mysql_errno(1062), ErrorCode::kUniqueViolation);
  EXPECT_EQ(code_from_mysql_errno(1213), ErrorCode::kDeadlock);
  // MariaDB's snapshot isolation: the transaction was rolled back, as for 40001.
  EXPECT_EQ(code_from_mysql_errno(1020), ErrorCode::kSerializationFailure);
  EXPECT_EQ(code_from_mysql_errno(1047), ErrorCode::kConnectFailed);  // a Galera node not ready
  EXPECT_EQ(code_from_mysql_errno(1205), ErrorCode::kLockWaitTimeout);
  EXPECT_EQ(code_from_mysql_errno(1969), ErrorCode::kLockWaitTimeout);  // max_statement_time
  EXPECT_EQ(code_from_mysql_errno(3024), ErrorCode::kLockWaitTimeout);  // MAX_EXECUTION_TIME
  EXPECT_EQ(code_from_mysql_errno(3572), ErrorCode::kLockNotAvailable);
  EXPECT_EQ(code_from_mysql_errno(1146), ErrorCode::kUndefinedTable);
  EXPECT_EQ(code_from_mysql_errno(1045), ErrorCode::kAccessDenied);
  EXPECT_EQ(code_from_mysql_errno(2003), ErrorCode::kConnectFailed);
  EXPECT_EQ(code_from_mysql_errno(2013), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_from_mysql_errno(1927), ErrorCode::kConnectionLost);
  EXPECT_EQ(code_from_mysql_errno(9999), ErrorCode::kOther);
}

TEST(DriverError, OneLineScrubbedWithAdvice) {
  Error e =
      driver_error(ErrorCode::kUndefinedTable, "PostgreSQL h:1/db",
                   "relation \"x\" does not exist\nLINE 1: SELECT pw=hunter2", "hunter2", "42P01");
  std::string what = e.what();
  EXPECT_EQ(what.find('\n'), std::string::npos);
  EXPECT_EQ(what.find("hunter2"), std::string::npos);
  EXPECT_NE(what.find("SQLSTATE 42P01"), std::string::npos);
  EXPECT_NE(what.find("dblock migrate up"), std::string::npos);
  EXPECT_EQ(e.sqlstate(), "42P01");
  EXPECT_EQ(e.code(), ErrorCode::kUndefinedTable);
}

TEST(ErrorCodes, RetryableOnlyForTransientCodes) {
  EXPECT_TRUE(is_retryable(ErrorCode::kDeadlock));
  EXPECT_TRUE(is_retryable(ErrorCode::kConnectionLost));
  EXPECT_FALSE(is_retryable(ErrorCode::kAccessDenied));
  EXPECT_FALSE(is_retryable(ErrorCode::kUndefinedTable));
  EXPECT_EQ(to_string(ErrorCode::kLockWaitTimeout), "lock_wait_timeout");
}

TEST(ErrorCodes, RetryScopeSaysWhatToRetry) {
  EXPECT_EQ(retry_scope(ErrorCode::kLockNotAvailable), RetryScope::kCall);
  EXPECT_EQ(retry_scope(ErrorCode::kLockWaitTimeout), RetryScope::kCall);
  EXPECT_EQ(retry_scope(ErrorCode::kConnectionLost), RetryScope::kCall);
  EXPECT_EQ(retry_scope(ErrorCode::kPoolExhausted), RetryScope::kCall);
  EXPECT_EQ(retry_scope(ErrorCode::kDeadlock), RetryScope::kTransaction);
  EXPECT_EQ(retry_scope(ErrorCode::kSerializationFailure), RetryScope::kTransaction);
  // Retrying these would fail again, or could do the work twice.
  for (ErrorCode c :
       {ErrorCode::kCommitInDoubt, ErrorCode::kLeaseLost, ErrorCode::kFailedPrecondition,
        ErrorCode::kInvalidArgument, ErrorCode::kUniqueViolation, ErrorCode::kOther}) {
    EXPECT_EQ(retry_scope(c), RetryScope::kNone) << to_string(c);
    EXPECT_FALSE(Error(c, "x").retryable()) << to_string(c);
  }
  EXPECT_EQ(to_string(ErrorCode::kCommitInDoubt), "commit_in_doubt");
  EXPECT_EQ(to_string(ErrorCode::kPoolExhausted), "pool_exhausted");
}

TEST(ServerLocation, NamesTheServerWithIPv6InBrackets) {
  EXPECT_EQ(server_location(Dialect::kPostgreSQL, "127.0.0.1", "5432", "app"),
            "PostgreSQL 127.0.0.1:5432/app");
  EXPECT_EQ(server_location(Dialect::kMySQL, "::1", "3306", "app"), "MySQL [::1]:3306/app");
  EXPECT_EQ(server_location(Dialect::kPostgreSQL, "", "5432", "app"),
            "PostgreSQL (default socket):5432/app");
}

TEST(Classify, LibpqConnectMessages) {
  EXPECT_EQ(libpq_connect_code("FATAL:  password authentication failed for user \"x\""),
            ErrorCode::kAccessDenied);
  EXPECT_EQ(libpq_connect_code("FATAL:  role \"x\" does not exist"), ErrorCode::kAccessDenied);
  EXPECT_EQ(libpq_connect_code("invalid connection option \"colour\""),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(libpq_connect_code("invalid port number: \"x\""), ErrorCode::kInvalidArgument);
  // A URL's port list that does not pair with its host list (postgresql://a,b/db?port=1,2,3).
  EXPECT_EQ(libpq_connect_code("could not match 3 port numbers to 2 hosts"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(libpq_connect_code("connection refused"), ErrorCode::kConnectFailed);
}

TEST(LibpqMessageText, OneLineWithoutTheSqlEcho) {
  EXPECT_EQ(libpq_message_text("ERROR:  relation \"t\" does not exist\nLINE 1: SELECT * FROM t\n"
                               "                      ^\nHINT:  create it\n"),
            "  relation \"t\" does not exist HINT:  create it");
  EXPECT_EQ(libpq_message_text(""), "");
}

}  // namespace
}  // namespace dblock::detail
