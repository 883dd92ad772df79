// SPDX-License-Identifier: Apache-2.0
/// @file
/// Prometheus metrics of dblock's events (target dblock::prometheus, built on prometheus-cpp).
///
/// PrometheusMetrics is an Observer (dblock/observer.hpp) that counts acquisitions by outcome,
/// times waits, holds and renewals in histograms, gauges the waiters and the leases held, and
/// counts lost leases by reason and the critical sections that ran on after their lease was lost.
/// Its metrics are registered on a prometheus::Registry the service owns and exposes (with
/// prometheus-cpp's Exposer, or by serializing the registry itself).
///
/// @code
///   auto registry = std::make_shared<prometheus::Registry>();
///   prometheus::Exposer exposer("0.0.0.0:9464");
///   exposer.RegisterCollectable(registry);
///   dblock::set_observer(std::make_shared<dblock::PrometheusMetrics>(*registry));
/// @endcode
///
/// The metrics, their labels and PromQL to alert on them: docs/operations/monitoring.md,
/// "Prometheus".
///
/// Thread-safety: the observer calls may come from any number of threads at once (as every
/// observer's do). The registry must outlive the PrometheusMetrics, and the PrometheusMetrics
/// every lease acquired under it (set_observer and LockOptions::observer keep it alive for them).
#pragma once

#include <memory>
#include <vector>

#include "dblock/export.hpp"
#include "dblock/observer.hpp"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace dblock {

/// How PrometheusMetrics shapes its histograms: each a list of bucket upper bounds in seconds,
/// strictly increasing, not empty (the +Inf bucket is always added).
struct PrometheusOptions {
  /// dblock_acquire_wait_seconds: from a try's round trip (1 ms) to a long wait (60 s).
  std::vector<double> acquire_wait_buckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};
  /// dblock_lease_hold_seconds: from a short critical section (10 ms) to an hour.
  std::vector<double> hold_buckets{0.01, 0.05, 0.1,   0.5,   1.0,    5.0,   10.0,
                                   30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0};
  /// dblock_renew_seconds: a renewal's round trip, from 0.5 ms to 5 s.
  std::vector<double> renew_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                    0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
};

/// An Observer that turns dblock's events into Prometheus metrics registered on `registry`:
///
/// @verbatim
///   dblock_acquisitions_total{strategy,outcome}        counter
///   dblock_acquire_wait_seconds{strategy,outcome}      histogram
///   dblock_acquisitions_in_progress{strategy}          gauge (the callers waiting)
///   dblock_leases_held{strategy}                       gauge
///   dblock_lease_hold_seconds{strategy}                histogram
///   dblock_renewals_total{strategy}                    counter
///   dblock_renew_seconds{strategy}                     histogram
///   dblock_renewal_failures_total{strategy}            counter
///   dblock_leases_lost_total{strategy,reason}          counter
///   dblock_unprotected_sections_total{strategy}        counter
///   dblock_election_leader{election}                   gauge (1 while this process leads)
///   dblock_election_terms_total{election,ended}        counter
/// @endverbatim
///
/// A strategy's series appear with its first event, all at zero but the ones that event moves;
/// an election's with its first term.
/// Install it process-wide with set_observer() or per acquisition with LockOptions::observer.
class DBLOCK_EXPORT PrometheusMetrics final : public Observer {
 public:
  /// Registers the metric families on `registry` (which must outlive this object). Throws
  /// Error(kInvalidArgument) when a bucket list in `options` is empty or not strictly increasing,
  /// and what prometheus-cpp throws when the registry already has a family of one of these names
  /// with another type.
  explicit PrometheusMetrics(prometheus::Registry& registry, PrometheusOptions options = {});
  ~PrometheusMetrics() override;
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

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
