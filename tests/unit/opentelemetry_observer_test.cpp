// SPDX-License-Identifier: Apache-2.0
// dblock::OpenTelemetryObserver (dblock/opentelemetry.hpp) fed events directly, read back
// through opentelemetry-cpp's SDK (an in-memory span exporter and a pull metric reader): each
// span's name, attributes, status, times and parent, and each metric's points, against the
// events given. (OpenTelemetryTest drives real locks on every database x driver pair.)
#include <gtest/gtest.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/metrics/provider.h>
#include <opentelemetry/trace/noop.h>
#include <opentelemetry/trace/provider.h>
#include <opentelemetry/trace/scope.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "dblock/opentelemetry.hpp"
#include "otel_capture.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const OtelAttributes kUniqueKey{{"dblock.lock.strategy", "unique_key"}};
OtelAttributes with(std::string name, std::string value, OtelAttributes a = kUniqueKey) {
  a.emplace(std::move(name), std::move(value));
  return a;
}

LeaseEvent lease(std::string_view key, std::string_view id, std::int64_t token,
                 std::string_view strategy = "unique_key") {
  return LeaseEvent{strategy, key, token, id};
}

class OpenTelemetryObserverTest : public ::testing::Test {
 protected:
  // An acquisition of `key` that ends with `outcome` after `waited`.
  void acquire(std::string_view key, AcquireOutcome outcome, nanoseconds waited,
               LeaseEvent got = {}, std::string_view strategy = "unique_key") {
    observer_.acquire_started({strategy, key, milliseconds(500)});
    AcquireEnded e;
    e.strategy = strategy;
    e.key = key;
    e.timeout = milliseconds(500);
    e.outcome = outcome;
    e.waited = waited;
    e.attempts = 3;
    e.statements = 4;
    e.lease = got;
    if (outcome == AcquireOutcome::kFailed) e.error = "the database is down";
    observer_.acquire_ended(e);
  }

  OtelCapture otel_;
  OpenTelemetryObserver observer_{otel_.tracers(), otel_.meters()};
};

TEST_F(OpenTelemetryObserverTest, AnAcquisitionIsASpanFromItsStartWithWhatItDid) {
  acquire("k1", AcquireOutcome::kAcquired, milliseconds(250), lease("k1", "id-1", 42));
  acquire("k1", AcquireOutcome::kBusy, milliseconds(2));
  acquire("k1", AcquireOutcome::kFailed, milliseconds(3));

  auto spans = otel_.spans("dblock.acquire");
  ASSERT_EQ(spans.size(), 3u);
  const auto& got = spans[0]->GetAttributes();
  EXPECT_EQ(text_of(got, "dblock.lock.strategy"), "unique_key");
  EXPECT_EQ(text_of(got, "dblock.lock.key"), "k1");
  EXPECT_EQ(text_of(got, "dblock.acquire.outcome"), "acquired");
  EXPECT_EQ(text_of(got, "dblock.acquire.attempts"), "3");
  EXPECT_EQ(text_of(got, "dblock.acquire.statements"), "4");
  EXPECT_EQ(text_of(got, "dblock.acquire.timeout_ms"), "500");
  EXPECT_EQ(text_of(got, "dblock.lease.fencing_token"), "42");
  EXPECT_EQ(text_of(got, "dblock.lease.id"), "id-1");
  EXPECT_NE(spans[0]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  // It started when the acquisition began: its wait before the event that ended it.
  EXPECT_GE(spans[0]->GetDuration(), milliseconds(250));
  EXPECT_LT(spans[0]->GetDuration(), milliseconds(350));

  const auto& busy = spans[1]->GetAttributes();
  EXPECT_EQ(text_of(busy, "dblock.acquire.outcome"), "busy");
  EXPECT_EQ(text_of(busy, "dblock.lease.fencing_token"), "") << "no lease, no token";
  EXPECT_NE(spans[1]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  EXPECT_EQ(text_of(spans[2]->GetAttributes(), "dblock.acquire.outcome"), "failed");
  EXPECT_EQ(spans[2]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  EXPECT_EQ(std::string(spans[2]->GetDescription()), "the database is down");
}

TEST_F(OpenTelemetryObserverTest, AHeldSectionIsASpanFromTheAcquisitionToTheRelease) {
  acquire("k1", AcquireOutcome::kAcquired, milliseconds(1), lease("k1", "id-1", 7));
  acquire("k2", AcquireOutcome::kAcquired, milliseconds(1), lease("k2", "id-2", 8));
  EXPECT_TRUE(otel_.spans("dblock.hold").empty()) << "a held section's span ends at its release";

  observer_.renewal_failed({lease("k2", "id-2", 8), "connection lost", milliseconds(900), true});
  observer_.lost({lease("k2", "id-2", 8), LossReason::kTakenOver, milliseconds(1200)});
  observer_.released(
      {lease("k2", "id-2", 8), milliseconds(1300), ReleaseOutcome::kNotHeld, false, "", true});
  observer_.released(
      {lease("k1", "id-1", 7), milliseconds(20), ReleaseOutcome::kReleased, true, "", false});

  auto held = otel_.spans("dblock.hold");
  ASSERT_EQ(held.size(), 2u);
  const auto& lost = held[0]->GetAttributes();
  EXPECT_EQ(text_of(lost, "dblock.lock.key"), "k2");
  EXPECT_EQ(text_of(lost, "dblock.lease.id"), "id-2");
  EXPECT_EQ(text_of(lost, "dblock.lease.fencing_token"), "8");
  EXPECT_EQ(text_of(lost, "dblock.lease.lost"), "true");
  EXPECT_EQ(text_of(lost, "dblock.lease.loss_reason"), "taken_over");
  EXPECT_EQ(text_of(lost, "dblock.release.outcome"), "not_held");
  EXPECT_EQ(text_of(lost, "dblock.lease.dropped"), "false");
  EXPECT_EQ(held[0]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  ASSERT_EQ(held[0]->GetEvents().size(), 2u);
  EXPECT_EQ(held[0]->GetEvents()[0].GetName(), "dblock.renewal_failed");
  EXPECT_EQ(text_of(held[0]->GetEvents()[0].GetAttributes(), "dblock.renewal.error"),
            "connection lost");
  EXPECT_EQ(held[0]->GetEvents()[1].GetName(), "dblock.lease_lost");
  EXPECT_EQ(text_of(held[0]->GetEvents()[1].GetAttributes(), "dblock.lease.loss_reason"),
            "taken_over");

  const auto& kept = held[1]->GetAttributes();
  EXPECT_EQ(text_of(kept, "dblock.lock.key"), "k1");
  EXPECT_EQ(text_of(kept, "dblock.lease.id"), "id-1");
  EXPECT_EQ(text_of(kept, "dblock.lease.lost"), "false");
  EXPECT_EQ(text_of(kept, "dblock.lease.loss_reason"), "");
  EXPECT_EQ(text_of(kept, "dblock.release.outcome"), "released");
  EXPECT_EQ(text_of(kept, "dblock.lease.dropped"), "true");
  EXPECT_NE(held[1]->GetStatus(), opentelemetry::trace::StatusCode::kError);
  EXPECT_TRUE(held[1]->GetEvents().empty());
}

TEST_F(OpenTelemetryObserverTest, SpansAreChildrenOfTheSpanActiveWhereTheLockIsTaken) {
  auto tracer = otel_.tracers().GetTracer("the-service");
  auto request = tracer->StartSpan("request");
  {
    opentelemetry::trace::Scope active(request);
    acquire("k1", AcquireOutcome::kAcquired, milliseconds(1), lease("k1", "id-1", 1));
  }
  observer_.released(
      {lease("k1", "id-1", 1), milliseconds(5), ReleaseOutcome::kReleased, false, "", false});
  request->End();
  const auto request_id = request->GetContext().span_id();
  for (const char* name : {"dblock.acquire", "dblock.hold"}) {
    auto spans = otel_.spans(name);
    ASSERT_EQ(spans.size(), 1u) << name;
    EXPECT_EQ(spans[0]->GetParentSpanId(), request_id) << name;
    EXPECT_EQ(spans[0]->GetTraceId(), request->GetContext().trace_id()) << name;
  }
}

TEST_F(OpenTelemetryObserverTest, TheMetricsCountWhatTheEventsSaid) {
  observer_.acquire_started({"unique_key", "k1", std::nullopt});
  observer_.acquire_started({"row", "k9", std::nullopt});
  {
    const OtelMetrics waiting = otel_.metrics();
    EXPECT_EQ(waiting.value("dblock.acquisitions.in_progress", kUniqueKey), 1);
    EXPECT_EQ(waiting.value("dblock.acquisitions.in_progress", {{"dblock.lock.strategy", "row"}}),
              1);
  }
  AcquireEnded ended;
  ended.strategy = "unique_key";
  ended.key = "k1";
  ended.outcome = AcquireOutcome::kAcquired;
  ended.waited = milliseconds(1500);
  ended.lease = lease("k1", "id-1", 1);
  observer_.acquire_ended(ended);
  acquire("k1", AcquireOutcome::kTimedOut, milliseconds(500));
  acquire("k1", AcquireOutcome::kTimedOut, milliseconds(300));
  acquire("k3", AcquireOutcome::kAcquired, milliseconds(1), lease("k3", "id-3", 3));
  observer_.renewed({lease("k1", "id-1", 1), milliseconds(4), milliseconds(30000), true});
  observer_.renewed({lease("k1", "id-1", 1), milliseconds(6), milliseconds(30000), false});
  observer_.renewal_failed({lease("k1", "id-1", 1), "timeout", milliseconds(100), true});
  observer_.lost({lease("k1", "id-1", 1), LossReason::kExpired, milliseconds(2000)});
  observer_.released(
      {lease("k1", "id-1", 1), milliseconds(2500), ReleaseOutcome::kNotHeld, false, "", true});

  const OtelMetrics m = otel_.metrics();
  SCOPED_TRACE(m.text());
  EXPECT_EQ(m.value("dblock.acquisitions", with("dblock.acquire.outcome", "acquired")), 2);
  EXPECT_EQ(m.value("dblock.acquisitions", with("dblock.acquire.outcome", "timed_out")), 2);
  EXPECT_FALSE(m.has("dblock.acquisitions", with("dblock.acquire.outcome", "busy")));
  const auto timed_out = m("dblock.acquire.duration", with("dblock.acquire.outcome", "timed_out"));
  EXPECT_EQ(timed_out.count, 2u);
  EXPECT_DOUBLE_EQ(timed_out.sum, 0.8);
  EXPECT_DOUBLE_EQ(m("dblock.acquire.duration", with("dblock.acquire.outcome", "acquired")).sum,
                   1.501);
  // The row acquisition has not ended; the unique-key ones all have.
  EXPECT_EQ(m.value("dblock.acquisitions.in_progress", kUniqueKey), 0);
  EXPECT_EQ(m.value("dblock.acquisitions.in_progress", {{"dblock.lock.strategy", "row"}}), 1);
  EXPECT_EQ(m.value("dblock.leases.held", kUniqueKey), 1) << "k3 is still held";
  const auto hold = m("dblock.lease.hold.duration", kUniqueKey);
  EXPECT_EQ(hold.count, 1u);
  EXPECT_DOUBLE_EQ(hold.sum, 2.5);
  EXPECT_EQ(m.value("dblock.renewals", kUniqueKey), 2);
  const auto renew = m("dblock.renew.duration", kUniqueKey);
  EXPECT_EQ(renew.count, 2u);
  EXPECT_DOUBLE_EQ(renew.sum, 0.010);
  EXPECT_EQ(m.value("dblock.renewal.failures", kUniqueKey), 1);
  EXPECT_EQ(m.value("dblock.leases.lost", with("dblock.lease.loss_reason", "expired")), 1);
  EXPECT_FALSE(m.has("dblock.leases.lost", with("dblock.lease.loss_reason", "taken_over")));
  EXPECT_EQ(m.value("dblock.sections.unprotected", kUniqueKey), 1);

  EXPECT_EQ(m.units.at("dblock.acquire.duration"), "s");
  EXPECT_EQ(m.units.at("dblock.lease.hold.duration"), "s");
  EXPECT_EQ(m.units.at("dblock.renew.duration"), "s");
  EXPECT_EQ(m.units.at("dblock.acquisitions"), "{acquisition}");
  EXPECT_EQ(m.units.at("dblock.leases.held"), "{lease}");
}

TEST_F(OpenTelemetryObserverTest, ADroppedLostLeaseIsNotAnUnprotectedSection) {
  acquire("k1", AcquireOutcome::kAcquired, milliseconds(1), lease("k1", "id-1", 1));
  observer_.lost({lease("k1", "id-1", 1), LossReason::kRemoved, milliseconds(10)});
  observer_.released(
      {lease("k1", "id-1", 1), milliseconds(20), ReleaseOutcome::kNotHeld, true, "", true});
  const OtelMetrics m = otel_.metrics();
  EXPECT_EQ(m.value("dblock.leases.lost", with("dblock.lease.loss_reason", "removed")), 1);
  EXPECT_FALSE(m.has("dblock.sections.unprotected", kUniqueKey)) << m.text();
  EXPECT_EQ(m.value("dblock.leases.held", kUniqueKey), 0);
}

TEST_F(OpenTelemetryObserverTest, AnElectionsTermsMoveItsLeaderCountAndAreCountedByWhyTheyEnded) {
  const OtelAttributes jobs{{"dblock.election.name", "jobs"}};
  const auto ended = [&](const char* why) {
    return OtelAttributes{{"dblock.election.name", "jobs"}, {"dblock.term.ended", why}};
  };
  observer_.term_began({"jobs", "a", 7, nanoseconds(0), TermEnd::kReturned, {}});
  EXPECT_EQ(otel_.metrics().value("dblock.election.leader", jobs), 1);
  observer_.term_ended({"jobs", "a", 7, milliseconds(900), TermEnd::kLost, {}});
  observer_.term_began({"jobs", "a", 9, nanoseconds(0), TermEnd::kReturned, {}});
  observer_.term_ended({"jobs", "a", 9, milliseconds(100), TermEnd::kLost, {}});
  observer_.term_began({"jobs", "a", 12, nanoseconds(0), TermEnd::kReturned, {}});
  observer_.term_ended({"jobs", "a", 12, milliseconds(100), TermEnd::kStopped, {}});
  const OtelMetrics m = otel_.metrics();
  SCOPED_TRACE(m.text());
  EXPECT_EQ(m.value("dblock.election.leader", jobs), 0);
  EXPECT_EQ(m.value("dblock.election.terms", ended("lost")), 2);
  EXPECT_EQ(m.value("dblock.election.terms", ended("stopped")), 1);
  EXPECT_FALSE(m.has("dblock.election.terms", ended("threw")));
  EXPECT_EQ(m.units.at("dblock.election.terms"), "{term}");
}

TEST(OpenTelemetryOptionsTest, WithoutSpansOrKeysNoneIsMadeAndTheMetricsStay) {
  OtelCapture otel;
  OpenTelemetryObserver observer(otel.tracers(), otel.meters(),
                                 {.spans = false, .key_attribute = false});
  observer.acquire_started({"semaphore", "k", std::nullopt});
  AcquireEnded e;
  e.strategy = "semaphore";
  e.key = "k";
  e.outcome = AcquireOutcome::kBusy;
  observer.acquire_ended(e);
  EXPECT_TRUE(otel.spans().empty());
  EXPECT_EQ(otel.metrics().value("dblock.acquisitions", {{"dblock.lock.strategy", "semaphore"},
                                                         {"dblock.acquire.outcome", "busy"}}),
            1);

  OtelCapture keyless;
  OpenTelemetryObserver no_keys(keyless.tracers(), keyless.meters(), {.key_attribute = false});
  no_keys.acquire_started({"semaphore", "secret", std::nullopt});
  no_keys.acquire_ended(e);
  auto spans = keyless.spans("dblock.acquire");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(text_of(spans[0]->GetAttributes(), "dblock.lock.key"), "");
  EXPECT_EQ(text_of(spans[0]->GetAttributes(), "dblock.acquire.outcome"), "busy");
}

TEST(OpenTelemetryGlobalsTest, WithoutProvidersItTakesTheGlobalOnesAsTheyAreThen) {
  namespace trace = opentelemetry::trace;
  namespace metrics = opentelemetry::metrics;
  OtelCapture otel;
  // The test sets the globals to the capture's providers (owned by the capture), then back.
  trace::Provider::SetTracerProvider(
      std::shared_ptr<trace::TracerProvider>(&otel.tracers(), [](trace::TracerProvider*) {}));
  metrics::Provider::SetMeterProvider(
      std::shared_ptr<metrics::MeterProvider>(&otel.meters(), [](metrics::MeterProvider*) {}));
  {
    OpenTelemetryObserver observer;
    observer.acquire_started({"row", "k", std::nullopt});
    AcquireEnded e;
    e.strategy = "row";
    e.key = "k";
    e.outcome = AcquireOutcome::kBusy;
    observer.acquire_ended(e);
  }
  trace::Provider::SetTracerProvider(
      std::shared_ptr<trace::TracerProvider>(std::make_shared<trace::NoopTracerProvider>()));
  metrics::Provider::SetMeterProvider(
      std::shared_ptr<metrics::MeterProvider>(std::make_shared<metrics::NoopMeterProvider>()));
  EXPECT_EQ(otel.spans("dblock.acquire").size(), 1u);
  EXPECT_EQ(otel.metrics().value("dblock.acquisitions", {{"dblock.lock.strategy", "row"},
                                                         {"dblock.acquire.outcome", "busy"}}),
            1);
}

}  // namespace
}  // namespace dblock::testing
