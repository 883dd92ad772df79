// SPDX-License-Identifier: Apache-2.0
#include "enum_names.hpp"

#include <gtest/gtest.h>

#include <utility>

#include "dblock/dialect.hpp"
#include "dblock/doctor.hpp"
#include "dblock/error.hpp"
#include "dblock/observer.hpp"
#include "dblock/release_outcome.hpp"

namespace dblock {
namespace {

// Every enumerator has its own name: a table listed out of declaration order shows here.
TEST(EnumNames, EveryEnumeratorOfThePublicEnumsHasItsName) {
  EXPECT_EQ(to_string(Server::kPostgreSQL), "postgresql");
  EXPECT_EQ(to_string(Server::kMySQL), "mysql");
  EXPECT_EQ(to_string(Server::kMariaDB), "mariadb");
  EXPECT_EQ(to_string(ReleaseOutcome::kReleased), "released");
  EXPECT_EQ(to_string(ReleaseOutcome::kDecremented), "decremented");
  EXPECT_EQ(to_string(ReleaseOutcome::kNotHeld), "not_held");
  EXPECT_EQ(to_string(ReleaseOutcome::kConflict), "conflict");
  EXPECT_EQ(to_string(Finding::Status::kOk), "ok");
  EXPECT_EQ(to_string(Finding::Status::kWarning), "warning");
  EXPECT_EQ(to_string(Finding::Status::kFailure), "failure");
  EXPECT_EQ(to_string(DoctorRole::kApplication), "app");
  EXPECT_EQ(to_string(DoctorRole::kCleaner), "cleaner");
  EXPECT_EQ(to_string(DoctorRole::kMigrator), "migrator");
  const std::pair<ErrorCode, const char*> codes[] = {
      {ErrorCode::kUniqueViolation, "unique_violation"},
      {ErrorCode::kLockNotAvailable, "lock_not_available"},
      {ErrorCode::kLockWaitTimeout, "lock_wait_timeout"},
      {ErrorCode::kDeadlock, "deadlock"},
      {ErrorCode::kSerializationFailure, "serialization_failure"},
      {ErrorCode::kConnectionLost, "connection_lost"},
      {ErrorCode::kConnectFailed, "connect_failed"},
      {ErrorCode::kAccessDenied, "access_denied"},
      {ErrorCode::kUndefinedTable, "undefined_table"},
      {ErrorCode::kInvalidArgument, "invalid_argument"},
      {ErrorCode::kFailedPrecondition, "failed_precondition"},
      {ErrorCode::kPoolExhausted, "pool_exhausted"},
      {ErrorCode::kCommitInDoubt, "commit_in_doubt"},
      {ErrorCode::kLeaseLost, "lease_lost"},
      {ErrorCode::kOther, "other"}};
  for (const auto& [code, name] : codes) EXPECT_EQ(to_string(code), name);
  EXPECT_EQ(to_string(AcquireOutcome::kAcquired), "acquired");
  EXPECT_EQ(to_string(AcquireOutcome::kBusy), "busy");
  EXPECT_EQ(to_string(AcquireOutcome::kTimedOut), "timed_out");
  EXPECT_EQ(to_string(AcquireOutcome::kFailed), "failed");
  EXPECT_EQ(to_string(LossReason::kExpired), "expired");
  EXPECT_EQ(to_string(LossReason::kTakenOver), "taken_over");
  EXPECT_EQ(to_string(LossReason::kRemoved), "removed");
  EXPECT_EQ(to_string(LossReason::kGone), "gone");
  EXPECT_EQ(to_string(LossReason::kSessionEnded), "session_ended");
}

// A value that is no enumerator (a cast from a wider integer) gets the fallback each to_string
// gave it before, not a neighbour's name or a read past the table.
TEST(EnumNames, AValueThatIsNoEnumeratorGetsTheFallback) {
  EXPECT_EQ(to_string(static_cast<Server>(3)), "unknown");
  EXPECT_EQ(to_string(static_cast<Server>(-1)), "unknown");
  EXPECT_EQ(to_string(static_cast<ErrorCode>(15)), "other");
  EXPECT_EQ(to_string(static_cast<ReleaseOutcome>(4)), "not_held");
  EXPECT_EQ(to_string(static_cast<Finding::Status>(7)), "unknown");
  EXPECT_EQ(to_string(static_cast<DoctorRole>(-2)), "unknown");
  EXPECT_EQ(to_string(static_cast<AcquireOutcome>(4)), "unknown");
  EXPECT_EQ(to_string(static_cast<LossReason>(5)), "unknown");
}

TEST(EnumNames, ATableNamesItsEnumeratorsInOrder) {
  enum class Colour { kRed, kGreen, kBlue };
  constexpr auto kNames = detail::enum_names<Colour::kBlue>({"red", "green", "blue"});
  static_assert(kNames.of(Colour::kGreen, "?") == "green");
  EXPECT_EQ(kNames.of(Colour::kRed, "?"), "red");
  EXPECT_EQ(kNames.of(Colour::kBlue, "?"), "blue");
  EXPECT_EQ(kNames.of(static_cast<Colour>(3), "?"), "?");
}

}  // namespace
}  // namespace dblock
