// SPDX-License-Identifier: Apache-2.0
// UniqueKeyLock without a database: a scripted connection answers as PostgreSQL would, for what
// the integration suite cannot bring about on demand (statements that keep meeting contention).
#include "dblock/unique_key_lock.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "dblock/error.hpp"
#include "scripted_connection.hpp"
#include "thrown.hpp"

namespace dblock {
namespace {

// A release and a renewal whose statement kept meeting contention through the lock's retries
// report it alike: kLockWaitTimeout, retry the call later. None is a transaction of the caller's
// that the server rolled back (kDeadlock, kSerializationFailure: retry the whole transaction),
// whatever contention the server reported.
TEST(UniqueKeyLock, AReleaseOrRenewalThatKeepsContendingIsALockWaitTimeout) {
  for (ErrorCode contention : {ErrorCode::kDeadlock, ErrorCode::kSerializationFailure,
                               ErrorCode::kLockWaitTimeout, ErrorCode::kLockNotAvailable}) {
    SCOPED_TRACE(std::string(to_string(contention)));
    ScriptedConnection conn(Server::kPostgreSQL);
    conn.answer = [&](const std::string& sql) {
      if (sql.find("INSERT INTO") != std::string::npos) return token("7");  // the acquire
      throw Error(contention, "scripted contention");
    };
    auto source = borrow(conn);
    UniqueKeyLock locks(*source, {.notify = false, .contention_retries = 1});
    auto lease = locks.try_acquire("k", {.auto_renew = false});
    ASSERT_TRUE(lease);
    const std::optional<Error> renewal = error_of([&] { lease->renew(); });
    ASSERT_TRUE(renewal) << "the renewal threw nothing";
    EXPECT_EQ(renewal->code(), ErrorCode::kLockWaitTimeout) << renewal->what();
    EXPECT_EQ(renewal->retry_scope(), RetryScope::kCall);
    const std::optional<Error> release = error_of([&] { lease->release(); });
    ASSERT_TRUE(release) << "the release threw nothing";
    EXPECT_EQ(release->code(), ErrorCode::kLockWaitTimeout) << release->what();
    EXPECT_EQ(release->retry_scope(), RetryScope::kCall);
    EXPECT_NE(std::string(release->what()).find("ends by its TTL"), std::string::npos)
        << release->what();
  }
}

}  // namespace
}  // namespace dblock
