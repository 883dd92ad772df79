// SPDX-License-Identifier: Apache-2.0
/// @file
/// OpenTelemetry spans and metrics of dblock's events (target dblock::opentelemetry, built on
/// opentelemetry-cpp's API).
///
/// OpenTelemetryObserver is an Observer (dblock/observer.hpp) that makes a span for each
/// acquisition and one for each held section (from the acquisition to the release), and keeps the
/// metrics PrometheusMetrics keeps (acquisitions by outcome, waits, holds and renewals in
/// histograms, the waiters and the leases held, lost leases by reason, renewal failures and the
/// critical sections that ran on after their lease was lost), with OpenTelemetry's names and
/// units. It takes the tracer and meter providers the service set up with the SDK (or any other
/// implementation of the API); it never installs a global provider.
///
/// @code
///   auto observer = std::make_shared<dblock::OpenTelemetryObserver>(*tracer_provider,
///                                                                   *meter_provider);
///   dblock::set_observer(observer);
/// @endcode
///
/// The span names, attributes and metrics, and the histogram views to give the SDK:
/// docs/operations/monitoring.md, "OpenTelemetry".
///
/// Thread-safety: the observer calls may come from any number of threads at once (as every
/// observer's do); none throws. The OpenTelemetryObserver must outlive every lease acquired under
/// it (set_observer and LockOptions::observer keep it alive for them).
#pragma once

#include <opentelemetry/metrics/meter_provider.h>
#include <opentelemetry/trace/tracer_provider.h>

#include <memory>
#include <string>

#include "dblock/export.hpp"
#include "dblock/observer.hpp"

namespace dblock {

/// What OpenTelemetryObserver records.
struct OpenTelemetryOptions {
  /// The instrumentation scope its tracer and meter are asked for under (with dblock's version).
  std::string scope_name = "dblock";
  /// Spans: dblock.acquire for each acquisition, dblock.hold for each lease held.
  bool spans = true;
  /// The metrics (dblock.acquisitions, dblock.acquire.duration, ...).
  bool metrics = true;
  /// The dblock.lock.key attribute on spans (never on metrics). Off where keys carry what a
  /// trace backend must not see.
  bool key_attribute = true;
};

/// An Observer that turns dblock's events into OpenTelemetry spans and metrics:
///
/// @verbatim
///   span dblock.acquire    acquire_started .. acquire_ended: strategy, key, outcome, attempts,
///                          statements, timeout, fencing token and lease id when acquired;
///                          status error when it failed
///   span dblock.hold       acquired .. released or dropped: strategy, key, fencing token, lease
///                          id, release outcome, dropped, lost and loss reason; an event when
///                          it was found lost and for each failed renewal; status error when
///                          it was lost before or by its release
///   dblock.acquisitions              counter        {acquisition}  strategy, outcome
///   dblock.acquire.duration          histogram      s              strategy, outcome
///   dblock.acquisitions.in_progress  updowncounter  {acquisition}  strategy
///   dblock.leases.held               updowncounter  {lease}        strategy
///   dblock.lease.hold.duration       histogram      s              strategy
///   dblock.renewals                  counter        {renewal}      strategy
///   dblock.renew.duration            histogram      s              strategy
///   dblock.renewal.failures          counter        {failure}      strategy
///   dblock.leases.lost               counter        {lease}        strategy, reason
///   dblock.sections.unprotected      counter        {section}      strategy
///   dblock.election.leader           updowncounter  {term}         election (1 while leading)
///   dblock.election.terms            counter        {term}         election, ended
/// @endverbatim
///
/// The metrics' attributes are dblock.lock.strategy, dblock.acquire.outcome,
/// dblock.lease.loss_reason and dblock.term.ended, each a small fixed set of values (never a
/// key), and an election's metrics dblock.election.name (a service runs a few elections). Spans
/// start as children of the span active on the thread that acquires. Install it process-wide with
/// set_observer() or per acquisition with LockOptions::observer.
class DBLOCK_EXPORT OpenTelemetryObserver final : public Observer {
 public:
  /// Asks `tracers` for a tracer and `meters` for a meter (scope `options.scope_name`, dblock's
  /// version) and makes the instruments. The providers need not outlive this object (what they
  /// hand out keeps what it needs alive).
  OpenTelemetryObserver(opentelemetry::trace::TracerProvider& tracers,
                        opentelemetry::metrics::MeterProvider& meters,
                        OpenTelemetryOptions options = {});
  /// The same with the global providers (opentelemetry::trace::Provider and
  /// opentelemetry::metrics::Provider) as they are now; it does not set them.
  explicit OpenTelemetryObserver(OpenTelemetryOptions options = {});
  /// Ends the spans of the leases it still follows (a lease leaked until the process exits).
  ~OpenTelemetryObserver() override;
  OpenTelemetryObserver(const OpenTelemetryObserver&) = delete;
  OpenTelemetryObserver& operator=(const OpenTelemetryObserver&) = delete;

  void acquire_started(const AcquireStarted& event) override;
  void acquire_ended(const AcquireEnded& event) override;
  void renewed(const Renewed& event) override;
  void renewal_failed(const RenewalFailed& event) override;
  void lost(const LeaseLost& event) override;
  void released(const Released& event) override;
  void term_began(const TermEvent& event) override;
  void term_ended(const TermEvent& event) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dblock
