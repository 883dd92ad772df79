// SPDX-License-Identifier: Apache-2.0
// UniqueKeyLock without a database: a scripted connection answers as PostgreSQL would, for what
// the integration suite cannot bring about on demand (statements that keep meeting contention).
#include "dblock/unique_key_lock.hpp"

#include <gtest/gtest.h>

#include <string>

#include "dblock/error.hpp"
#include "scripted_connection.hpp"

namespace dblock {
namespace {

// What `call` threw (kOther if it threw nothing).
template <class Call>
Error error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "nothing was thrown";
  return Error(ErrorCode::kOther, "nothing was thrown");
}

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
    const Error renewal = error_of([&] { lease->renew(); });
    EXPECT_EQ(renewal.code(), ErrorCode::kLockWaitTimeout) << renewal.what();
    EXPECT_EQ(renewal.retry_scope(), RetryScope::kCall);
    const Error release = error_of([&] { lease->release(); });
    EXPECT_EQ(release.code(), ErrorCode::kLockWaitTimeout) << release.what();
    EXPECT_EQ(release.retry_scope(), RetryScope::kCall);
    EXPECT_NE(std::string(release.what()).find("ends by its TTL"), std::string::npos)
        << release.what();
  }
}

}  // namespace
}  // namespace dblock
