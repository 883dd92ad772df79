// SPDX-License-Identifier: Apache-2.0
// dblock::OpenTelemetryObserver: dblock's events as OpenTelemetry spans and metrics, through
// opentelemetry-cpp's API only (the service brings the SDK). An acquisition's span is made when
// it ends, starting when it began (its end less its wait), so nothing is kept between the two
// calls; a held section's span is kept by lease id from the acquisition to the release, under a
// mutex. Every call catches what it could throw: an observer must not throw.
#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/common/timestamp.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/metrics/meter.h>
#include <opentelemetry/metrics/provider.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/nostd/string_view.h>
#include <opentelemetry/nostd/unique_ptr.h>
#include <opentelemetry/trace/provider.h>
#include <opentelemetry/trace/span.h>
#include <opentelemetry/trace/span_startoptions.h>
#include <opentelemetry/trace/tracer.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/opentelemetry.hpp"
#include "dblock/version.hpp"

namespace dblock {
namespace {

namespace otel = opentelemetry;
using Attribute = std::pair<otel::nostd::string_view, otel::common::AttributeValue>;
using SpanPtr = otel::nostd::shared_ptr<otel::trace::Span>;

otel::nostd::string_view view(std::string_view s) { return {s.data(), s.size()}; }
double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

constexpr std::string_view kStrategy = "dblock.lock.strategy";
constexpr std::string_view kKey = "dblock.lock.key";
constexpr std::string_view kOutcome = "dblock.acquire.outcome";
constexpr std::string_view kReason = "dblock.lease.loss_reason";
constexpr std::string_view kToken = "dblock.lease.fencing_token";
constexpr std::string_view kLeaseId = "dblock.lease.id";
constexpr std::string_view kElection = "dblock.election.name";
constexpr std::string_view kTermEnd = "dblock.term.ended";

}  // namespace

struct OpenTelemetryObserver::Impl {
  Impl(otel::trace::TracerProvider& tracers, otel::metrics::MeterProvider& meters,
       OpenTelemetryOptions o)
      : options(std::move(o)) {
    const auto scope = view(options.scope_name);
    if (options.spans) tracer = tracers.GetTracer(scope, DBLOCK_VERSION_STRING);
    if (!options.metrics) return;
    meter = meters.GetMeter(scope, DBLOCK_VERSION_STRING);
    acquisitions = meter->CreateUInt64Counter(
        "dblock.acquisitions",
        "Acquisitions that ended, by strategy and outcome (acquired, busy, timed_out, failed)",
        "{acquisition}");
    wait = meter->CreateDoubleHistogram(
        "dblock.acquire.duration", "How long acquisitions took, from the call to its end", "s");
    in_progress = meter->CreateInt64UpDownCounter(
        "dblock.acquisitions.in_progress",
        "Acquisitions started and not ended yet: the callers waiting", "{acquisition}");
    held = meter->CreateInt64UpDownCounter(
        "dblock.leases.held", "Leases acquired and not released or dropped yet", "{lease}");
    hold = meter->CreateDoubleHistogram(
        "dblock.lease.hold.duration",
        "How long leases were held, from their acquisition to their release", "s");
    renewals = meter->CreateUInt64Counter(
        "dblock.renewals", "Renewals that succeeded (the renewer's and Lease::renew's)",
        "{renewal}");
    renew = meter->CreateDoubleHistogram("dblock.renew.duration",
                                         "Round trip of the renewals that succeeded", "s");
    renewal_failures = meter->CreateUInt64Counter(
        "dblock.renewal.failures", "Renewals that failed with an error (the lease not lost yet)",
        "{failure}");
    lost = meter->CreateUInt64Counter(
        "dblock.leases.lost",
        "Leases found lost, by reason (expired, taken_over, removed, gone, session_ended)",
        "{lease}");
    unprotected = meter->CreateUInt64Counter(
        "dblock.sections.unprotected",
        "Leases released by their caller after they were lost: critical sections that ran on "
        "without their lock",
        "{section}");
    leading = meter->CreateInt64UpDownCounter(
        "dblock.election.leader", "Terms of the election this process leads now: 1 while it leads",
        "{term}");
    terms = meter->CreateUInt64Counter(
        "dblock.election.terms",
        "Terms of the election this process led that ended, by why (returned, threw, lost, "
        "stopped)",
        "{term}");
  }

  // Sets the attributes every span of a lease has.
  void lease_attributes(otel::trace::Span& span, const LeaseEvent& lease) const {
    span.SetAttribute(view(kStrategy), view(lease.strategy));
    if (options.key_attribute) span.SetAttribute(view(kKey), view(lease.key));
    span.SetAttribute(view(kToken), lease.fencing_token);
    span.SetAttribute(view(kLeaseId), view(lease.lease_id));
  }

  // The span of the held section of `lease_id`, or null; `take` removes it.
  SpanPtr find_held(std::string_view lease_id, bool take) {
    std::lock_guard lock(mu);
    auto it = holds.find(lease_id);
    if (it == holds.end() || it->second.empty()) return SpanPtr();
    SpanPtr span = it->second.back();
    if (take) {
      it->second.pop_back();
      if (it->second.empty()) holds.erase(it);
    }
    return span;
  }

  OpenTelemetryOptions options;
  otel::nostd::shared_ptr<otel::trace::Tracer> tracer;
  otel::nostd::shared_ptr<otel::metrics::Meter> meter;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> acquisitions;
  otel::nostd::unique_ptr<otel::metrics::Histogram<double>> wait;
  otel::nostd::unique_ptr<otel::metrics::UpDownCounter<std::int64_t>> in_progress;
  otel::nostd::unique_ptr<otel::metrics::UpDownCounter<std::int64_t>> held;
  otel::nostd::unique_ptr<otel::metrics::Histogram<double>> hold;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> renewals;
  otel::nostd::unique_ptr<otel::metrics::Histogram<double>> renew;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> renewal_failures;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> lost;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> unprotected;
  otel::nostd::unique_ptr<otel::metrics::UpDownCounter<std::int64_t>> leading;
  otel::nostd::unique_ptr<otel::metrics::Counter<std::uint64_t>> terms;

  std::mutex mu;
  // The held sections followed, by lease id (a list: a caller's claim id can name two leases).
  std::map<std::string, std::vector<SpanPtr>, std::less<>> holds;
};

OpenTelemetryObserver::OpenTelemetryObserver(otel::trace::TracerProvider& tracers,
                                             otel::metrics::MeterProvider& meters,
                                             OpenTelemetryOptions options)
    : impl_(std::make_unique<Impl>(tracers, meters, std::move(options))) {}

OpenTelemetryObserver::OpenTelemetryObserver(OpenTelemetryOptions options)
    : OpenTelemetryObserver(*otel::trace::Provider::GetTracerProvider(),
                            *otel::metrics::Provider::GetMeterProvider(), std::move(options)) {}

OpenTelemetryObserver::~OpenTelemetryObserver() {
  for (auto& [id, list] : impl_->holds) {
    for (SpanPtr& span : list) span->End();
  }
}

void OpenTelemetryObserver::acquire_started(const AcquireStarted& event) {
  try {
    if (impl_->in_progress) {
      const std::array<Attribute, 1> attributes{Attribute{view(kStrategy), view(event.strategy)}};
      impl_->in_progress->Add(1, attributes);
    }
  } catch (...) {
  }
}

void OpenTelemetryObserver::acquire_ended(const AcquireEnded& event) {
  try {
    const auto steady_end = std::chrono::steady_clock::now();
    const auto system_end = std::chrono::system_clock::now();
    const std::string_view outcome = to_string(event.outcome);
    const bool acquired = event.outcome == AcquireOutcome::kAcquired;
    if (impl_->meter) {
      const std::array<Attribute, 1> strategy{Attribute{view(kStrategy), view(event.strategy)}};
      const std::array<Attribute, 2> both{Attribute{view(kStrategy), view(event.strategy)},
                                          Attribute{view(kOutcome), view(outcome)}};
      impl_->in_progress->Add(-1, strategy);
      impl_->acquisitions->Add(1, both);
      impl_->wait->Record(seconds(event.waited), both, otel::context::Context{});
      if (acquired) impl_->held->Add(1, strategy);
    }
    if (!impl_->tracer) return;

    otel::trace::StartSpanOptions start;
    const auto waited =
        std::chrono::duration_cast<std::chrono::system_clock::duration>(event.waited);
    start.start_steady_time = otel::common::SteadyTimestamp(
        steady_end - std::chrono::duration_cast<std::chrono::steady_clock::duration>(event.waited));
    start.start_system_time = otel::common::SystemTimestamp(system_end - waited);
    SpanPtr span = impl_->tracer->StartSpan("dblock.acquire", start);
    span->SetAttribute(view(kStrategy), view(event.strategy));
    if (impl_->options.key_attribute) span->SetAttribute(view(kKey), view(event.key));
    span->SetAttribute(view(kOutcome), view(outcome));
    span->SetAttribute("dblock.acquire.attempts", event.attempts);
    span->SetAttribute("dblock.acquire.statements", event.statements);
    if (event.timeout && *event.timeout != std::chrono::milliseconds::max()) {
      span->SetAttribute("dblock.acquire.timeout_ms",
                         static_cast<std::int64_t>(event.timeout->count()));
    }
    if (acquired) {
      span->SetAttribute(view(kToken), event.lease.fencing_token);
      span->SetAttribute(view(kLeaseId), view(event.lease.lease_id));
    }
    if (event.outcome == AcquireOutcome::kFailed) {
      span->SetStatus(otel::trace::StatusCode::kError, view(event.error));
    }
    otel::trace::EndSpanOptions end;
    end.end_steady_time = otel::common::SteadyTimestamp(steady_end);
    span->End(end);

    if (!acquired) return;
    otel::trace::StartSpanOptions held_start;
    held_start.start_steady_time = otel::common::SteadyTimestamp(steady_end);
    held_start.start_system_time = otel::common::SystemTimestamp(system_end);
    SpanPtr held = impl_->tracer->StartSpan("dblock.hold", held_start);
    impl_->lease_attributes(*held, event.lease);
    std::lock_guard lock(impl_->mu);
    impl_->holds[std::string(event.lease.lease_id)].push_back(std::move(held));
  } catch (...) {
  }
}

void OpenTelemetryObserver::renewed(const Renewed& event) {
  try {
    if (!impl_->meter) return;
    const std::array<Attribute, 1> strategy{Attribute{view(kStrategy), view(event.lease.strategy)}};
    impl_->renewals->Add(1, strategy);
    impl_->renew->Record(seconds(event.latency), strategy, otel::context::Context{});
  } catch (...) {
  }
}

void OpenTelemetryObserver::renewal_failed(const RenewalFailed& event) {
  try {
    if (impl_->meter) {
      const std::array<Attribute, 1> strategy{
          Attribute{view(kStrategy), view(event.lease.strategy)}};
      impl_->renewal_failures->Add(1, strategy);
    }
    if (SpanPtr span = impl_->find_held(event.lease.lease_id, false)) {
      const std::array<Attribute, 2> what{
          Attribute{"dblock.renewal.error", view(event.error)},
          Attribute{"dblock.renewal.time_left_ms",
                    static_cast<std::int64_t>(event.time_left.count())}};
      span->AddEvent("dblock.renewal_failed", what);
    }
  } catch (...) {
  }
}

void OpenTelemetryObserver::lost(const LeaseLost& event) {
  try {
    const std::string_view reason = to_string(event.reason);
    if (impl_->meter) {
      const std::array<Attribute, 2> both{Attribute{view(kStrategy), view(event.lease.strategy)},
                                          Attribute{view(kReason), view(reason)}};
      impl_->lost->Add(1, both);
    }
    if (SpanPtr span = impl_->find_held(event.lease.lease_id, false)) {
      span->SetAttribute("dblock.lease.lost", true);
      span->SetAttribute(view(kReason), view(reason));
      const std::array<Attribute, 1> why{Attribute{view(kReason), view(reason)}};
      span->AddEvent("dblock.lease_lost", why);
    }
  } catch (...) {
  }
}

void OpenTelemetryObserver::released(const Released& event) {
  try {
    if (impl_->meter) {
      const std::array<Attribute, 1> strategy{
          Attribute{view(kStrategy), view(event.lease.strategy)}};
      impl_->held->Add(-1, strategy);
      impl_->hold->Record(seconds(event.held_for), strategy, otel::context::Context{});
      if (event.lost && !event.dropped) impl_->unprotected->Add(1, strategy);
    }
    SpanPtr span = impl_->find_held(event.lease.lease_id, true);
    if (!span) return;
    span->SetAttribute("dblock.release.outcome", view(to_string(event.outcome)));
    span->SetAttribute("dblock.lease.dropped", event.dropped);
    span->SetAttribute("dblock.lease.lost", event.lost);
    if (!event.error.empty()) span->SetAttribute("dblock.release.error", view(event.error));
    if (event.lost) {
      span->SetStatus(otel::trace::StatusCode::kError,
                      "the lease was lost before or by its release: the section under it ran "
                      "unprotected");
    }
    span->End();
  } catch (...) {
  }
}

void OpenTelemetryObserver::term_began(const TermEvent& event) {
  try {
    if (!impl_->meter) return;
    const std::array<Attribute, 1> election{Attribute{view(kElection), view(event.election)}};
    impl_->leading->Add(1, election);
  } catch (...) {
  }
}

void OpenTelemetryObserver::term_ended(const TermEvent& event) {
  try {
    if (!impl_->meter) return;
    const std::array<Attribute, 1> election{Attribute{view(kElection), view(event.election)}};
    impl_->leading->Add(-1, election);
    const std::array<Attribute, 2> both{Attribute{view(kElection), view(event.election)},
                                        Attribute{view(kTermEnd), view(to_string(event.why))}};
    impl_->terms->Add(1, both);
  } catch (...) {
  }
}

}  // namespace dblock
