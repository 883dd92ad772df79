// SPDX-License-Identifier: Apache-2.0
// dblock::OpenTelemetryObserver (dblock/opentelemetry.hpp) against every database x driver pair,
// from the side of the backend it reports to: acquisitions of each outcome, a waiter, a renewal,
// releases, a drop and leases taken over are done through a lock observed by it, with
// opentelemetry-cpp's SDK behind it (spans exported to memory, metrics collected by a reader),
// and each span and each metric point is checked against what was done.
#include "dblock/opentelemetry.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/error.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"
#include "otel_capture.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using SpanList = std::vector<std::unique_ptr<otel_sdk::trace::SpanData>>;

class OpenTelemetryTest : public MigratedPoolTest {
 protected:
  OpenTelemetryTest() : MigratedPoolTest("otel", 4) {}
  // Options of owner `owner` reporting to observer_; renewed only when the test says so.
  LockOptions observed(const std::string& owner, milliseconds ttl = std::chrono::seconds(30)) {
    LockOptions o = as(owner, ttl, /*auto_renew=*/false);
    o.observer = observer_;
    return o;
  }
  OtelCapture otel_;
  std::shared_ptr<OpenTelemetryObserver> observer_ =
      std::make_shared<OpenTelemetryObserver>(otel_.tracers(), otel_.meters());
};

const OtelAttributes kUniqueKey{{"dblock.lock.strategy", "unique_key"}};
OtelAttributes with(std::string name, std::string value, OtelAttributes a = kUniqueKey) {
  a.emplace(std::move(name), std::move(value));
  return a;
}

// The spans whose `attribute` is `value`.
std::vector<const otel_sdk::trace::SpanData*> where(const SpanList& spans,
                                                    const std::string& attribute,
                                                    const std::string& value) {
  std::vector<const otel_sdk::trace::SpanData*> out;
  for (const auto& s : spans) {
    if (text_of(s->GetAttributes(), attribute) == value) out.push_back(s.get());
  }
  return out;
}

TEST_P(OpenTelemetryTest, SpansAndMetricsTellTheAcquisitionsWaitsRenewalsLossesAndReleasesDone) {
  UniqueKeyLock lock(*pool_, {.tables = tables_});
  const std::string key = unique_name("otel");

  auto held = lock.try_acquire(key, observed("a"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(lock.try_acquire(key, observed("b")));
  EXPECT_FALSE(lock.acquire(key, milliseconds(150), observed("c")));
  LockOptions refused = observed("d");
  refused.ttl = milliseconds(0);
  EXPECT_THROW(lock.try_acquire(key, refused), Error);
  {
    const OtelMetrics now = otel_.metrics();
    EXPECT_EQ(now.value("dblock.leases.held", kUniqueKey), 1) << now.text();
    EXPECT_EQ(now.value("dblock.acquisitions.in_progress", kUniqueKey), 0) << now.text();
  }

  // A waiter counts as an acquisition in progress until it gets the key.
  auto waiter = std::async(std::launch::async,
                           [&] { return lock.acquire(key, milliseconds(10000), observed("e")); });
  bool seen_waiting = false;
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       !seen_waiting && Clock::now() < until; std::this_thread::sleep_for(milliseconds(5))) {
    seen_waiting = otel_.metrics().value("dblock.acquisitions.in_progress", kUniqueKey) == 1;
  }
  EXPECT_TRUE(seen_waiting) << "the waiter never showed in dblock.acquisitions.in_progress";
  EXPECT_TRUE(held->renew());
  const std::int64_t first_token = held->fencing_token();
  const std::string first_id = held->lease_id();
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  auto got = waiter.get();
  ASSERT_TRUE(got);
  const std::int64_t waiter_token = got->fencing_token();
  EXPECT_EQ(got->release(), ReleaseOutcome::kReleased);

  // Two leases whose TTL runs out and whose keys are taken over: the one released after the
  // loss ran unprotected, the one dropped is not counted so.
  const std::string released_late = unique_name("late");
  const std::string dropped_late = unique_name("drop");
  auto doomed = lock.try_acquire(released_late, observed("a", milliseconds(200)));
  auto doomed_dropped = lock.try_acquire(dropped_late, observed("a", milliseconds(200)));
  ASSERT_TRUE(doomed && doomed_dropped);
  const std::string doomed_id = doomed->lease_id();
  std::this_thread::sleep_for(milliseconds(400));
  auto taker = lock.try_acquire(released_late, observed("b"));
  auto taker_too = lock.try_acquire(dropped_late, observed("b"));
  ASSERT_TRUE(taker && taker_too);
  EXPECT_FALSE(doomed->renew());
  EXPECT_FALSE(doomed_dropped->renew());
  EXPECT_EQ(doomed->release(), ReleaseOutcome::kNotHeld);
  doomed_dropped.reset();
  EXPECT_EQ(taker->release(), ReleaseOutcome::kReleased);
  EXPECT_EQ(taker_too->release(), ReleaseOutcome::kReleased);

  // The acquisitions: a, b (busy), c (timed out), d (failed), e (after its wait), a twice, b
  // twice.
  const SpanList acquires = otel_.spans("dblock.acquire");
  ASSERT_EQ(acquires.size(), 9u);
  EXPECT_EQ(where(acquires, "dblock.acquire.outcome", "acquired").size(), 6u);
  ASSERT_EQ(where(acquires, "dblock.acquire.outcome", "busy").size(), 1u);
  ASSERT_EQ(where(acquires, "dblock.acquire.outcome", "timed_out").size(), 1u);
  ASSERT_EQ(where(acquires, "dblock.acquire.outcome", "failed").size(), 1u);
  for (const auto& s : acquires) {
    EXPECT_EQ(text_of(s->GetAttributes(), "dblock.lock.strategy"), "unique_key");
    // Every outcome but the refused TTL (checked before any statement) sent statements.
    const std::string statements = text_of(s->GetAttributes(), "dblock.acquire.statements");
    if (text_of(s->GetAttributes(), "dblock.acquire.outcome") != "failed") {
      EXPECT_GE(std::stoi(statements.empty() ? "0" : statements), 1);
    }
  }
  const auto* first = acquires[0].get();
  EXPECT_EQ(text_of(first->GetAttributes(), "dblock.lock.key"), key);
  EXPECT_EQ(text_of(first->GetAttributes(), "dblock.lease.fencing_token"),
            std::to_string(first_token));
  EXPECT_EQ(text_of(first->GetAttributes(), "dblock.lease.id"), first_id);
  EXPECT_EQ(text_of(first->GetAttributes(), "dblock.acquire.attempts"), "1");
  const auto* timed_out = where(acquires, "dblock.acquire.outcome", "timed_out")[0];
  EXPECT_GE(timed_out->GetDuration(), milliseconds(150)) << "the span covers the wait";
  EXPECT_LT(timed_out->GetDuration(), std::chrono::seconds(10));
  EXPECT_EQ(text_of(timed_out->GetAttributes(), "dblock.acquire.timeout_ms"), "150");
  EXPECT_EQ(text_of(timed_out->GetAttributes(), "dblock.lease.fencing_token"), "");
  const auto* failed = where(acquires, "dblock.acquire.outcome", "failed")[0];
  EXPECT_EQ(failed->GetStatus(), opentelemetry::trace::StatusCode::kError);
  EXPECT_NE(std::string(failed->GetDescription()).find("1 ms"), std::string::npos)
      << failed->GetDescription();
  const auto waited = where(acquires, "dblock.lease.fencing_token", std::to_string(waiter_token));
  ASSERT_EQ(waited.size(), 1u);
  EXPECT_EQ(text_of(waited[0]->GetAttributes(), "dblock.lock.key"), key);

  // The held sections, in the order they ended.
  const SpanList holds = otel_.spans("dblock.hold");
  ASSERT_EQ(holds.size(), 6u);
  EXPECT_EQ(text_of(holds[0]->GetAttributes(), "dblock.lease.id"), first_id);
  EXPECT_EQ(text_of(holds[0]->GetAttributes(), "dblock.release.outcome"), "released");
  EXPECT_EQ(text_of(holds[0]->GetAttributes(), "dblock.lease.lost"), "false");
  EXPECT_NE(holds[0]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  const auto lost = where(holds, "dblock.lease.lost", "true");
  ASSERT_EQ(lost.size(), 2u);
  for (const auto* s : lost) {
    EXPECT_EQ(text_of(s->GetAttributes(), "dblock.lease.loss_reason"), "taken_over");
    EXPECT_EQ(s->GetStatus(), opentelemetry::trace::StatusCode::kError);
    EXPECT_GE(s->GetDuration(), milliseconds(400));
    ASSERT_FALSE(s->GetEvents().empty());
    EXPECT_EQ(s->GetEvents().back().GetName(), "dblock.lease_lost");
  }
  const auto released_lost = where(holds, "dblock.lease.id", doomed_id);
  ASSERT_EQ(released_lost.size(), 1u);
  EXPECT_EQ(text_of(released_lost[0]->GetAttributes(), "dblock.lease.dropped"), "false");
  EXPECT_EQ(text_of(released_lost[0]->GetAttributes(), "dblock.release.outcome"), "not_held");
  EXPECT_EQ(where(holds, "dblock.lease.dropped", "true").size(), 1u);

  const OtelMetrics end = otel_.metrics();
  SCOPED_TRACE(end.text());
  EXPECT_EQ(end.value("dblock.acquisitions", with("dblock.acquire.outcome", "acquired")), 6);
  EXPECT_EQ(end.value("dblock.acquisitions", with("dblock.acquire.outcome", "busy")), 1);
  EXPECT_EQ(end.value("dblock.acquisitions", with("dblock.acquire.outcome", "timed_out")), 1);
  EXPECT_EQ(end.value("dblock.acquisitions", with("dblock.acquire.outcome", "failed")), 1);
  for (const char* outcome : {"acquired", "busy", "timed_out", "failed"}) {
    EXPECT_EQ(end("dblock.acquire.duration", with("dblock.acquire.outcome", outcome)).count,
              end.value("dblock.acquisitions", with("dblock.acquire.outcome", outcome)))
        << outcome;
  }
  const auto wait = end("dblock.acquire.duration", with("dblock.acquire.outcome", "timed_out"));
  EXPECT_GE(wait.sum, 0.15);
  EXPECT_LT(wait.sum, 10);
  EXPECT_EQ(end.value("dblock.acquisitions.in_progress", kUniqueKey), 0);
  EXPECT_EQ(end.value("dblock.leases.held", kUniqueKey), 0);
  const auto hold = end("dblock.lease.hold.duration", kUniqueKey);
  EXPECT_EQ(hold.count, 6u);
  EXPECT_GE(hold.sum, 0.8);
  EXPECT_EQ(end.value("dblock.renewals", kUniqueKey), 1);
  EXPECT_EQ(end("dblock.renew.duration", kUniqueKey).count, 1u);
  EXPECT_GT(end("dblock.renew.duration", kUniqueKey).sum, 0);
  EXPECT_FALSE(end.has("dblock.renewal.failures", kUniqueKey));
  EXPECT_EQ(end.value("dblock.leases.lost", with("dblock.lease.loss_reason", "taken_over")), 2);
  for (const char* reason : {"expired", "removed", "gone", "session_ended"}) {
    EXPECT_FALSE(end.has("dblock.leases.lost", with("dblock.lease.loss_reason", reason))) << reason;
  }
  EXPECT_EQ(end.value("dblock.sections.unprotected", kUniqueKey), 1);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Pairs, OpenTelemetryTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace dblock::testing
