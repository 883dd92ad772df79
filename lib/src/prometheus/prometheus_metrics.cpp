// SPDX-License-Identifier: Apache-2.0
// dblock::PrometheusMetrics: dblock's events as prometheus-cpp metrics. Each strategy's series
// are made on its first event and found again without a lock: the strategies dblock has are a
// fixed list, each with a slot of its own; a name not on it (a strategy added later) is looked
// up under a mutex.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/prometheus.hpp"

namespace dblock {
namespace {

constexpr std::array<AcquireOutcome, 4> kOutcomes{AcquireOutcome::kAcquired, AcquireOutcome::kBusy,
                                                  AcquireOutcome::kTimedOut,
                                                  AcquireOutcome::kFailed};
constexpr std::array<LossReason, 5> kReasons{LossReason::kExpired, LossReason::kTakenOver,
                                             LossReason::kRemoved, LossReason::kGone,
                                             LossReason::kSessionEnded};
constexpr std::array<TermEnd, 5> kTermEnds{TermEnd::kReturned, TermEnd::kThrew, TermEnd::kLost,
                                           TermEnd::kStopped, TermEnd::kHandedOff};
// The names LeaseEvent::strategy takes (dblock/observer.hpp).
constexpr std::array<std::string_view, 7> kStrategies{
    "unique_key", "semaphore", "reader", "writer", "row", "optimistic", "session"};

template <class Enum, std::size_t N>
std::size_t index_of(Enum value, const std::array<Enum, N>& all) {
  for (std::size_t i = 0; i < N; ++i) {
    if (all[i] == value) return i;
  }
  return N;
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

void check_buckets(const std::vector<double>& buckets, const char* name) {
  bool ok = !buckets.empty();
  for (std::size_t i = 0; ok && i < buckets.size(); ++i) {
    ok = std::isfinite(buckets[i]) && (i == 0 || buckets[i - 1] < buckets[i]);
  }
  if (!ok) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("PrometheusOptions::") + name +
                    " must be a non-empty list of finite bucket bounds in seconds, strictly "
                    "increasing (e.g. {0.001, 0.01, 0.1, 1})");
  }
}

// One strategy's series.
struct Series {
  std::array<prometheus::Counter*, kOutcomes.size()> acquisitions{};
  std::array<prometheus::Histogram*, kOutcomes.size()> wait{};
  prometheus::Gauge* in_progress = nullptr;
  prometheus::Gauge* held = nullptr;
  prometheus::Histogram* hold = nullptr;
  prometheus::Counter* renewals = nullptr;
  prometheus::Histogram* renew = nullptr;
  prometheus::Counter* renewal_failures = nullptr;
  std::array<prometheus::Counter*, kReasons.size()> lost{};
  prometheus::Counter* unprotected = nullptr;
};

}  // namespace

struct PrometheusMetrics::Impl {
  Impl(prometheus::Registry& registry, PrometheusOptions o)
      : options(std::move(o)),
        acquisitions(prometheus::BuildCounter()
                         .Name("dblock_acquisitions_total")
                         .Help("Acquisitions that ended, by strategy and outcome (acquired, busy, "
                               "timed_out, failed)")
                         .Register(registry)),
        wait(prometheus::BuildHistogram()
                 .Name("dblock_acquire_wait_seconds")
                 .Help("How long acquisitions took, from the call to its end, by outcome")
                 .Register(registry)),
        in_progress(prometheus::BuildGauge()
                        .Name("dblock_acquisitions_in_progress")
                        .Help("Acquisitions started and not ended yet: the callers waiting")
                        .Register(registry)),
        held(prometheus::BuildGauge()
                 .Name("dblock_leases_held")
                 .Help("Leases acquired and not released or dropped yet")
                 .Register(registry)),
        hold(prometheus::BuildHistogram()
                 .Name("dblock_lease_hold_seconds")
                 .Help("How long leases were held, from their acquisition to their release")
                 .Register(registry)),
        renewals(prometheus::BuildCounter()
                     .Name("dblock_renewals_total")
                     .Help("Renewals that succeeded (the renewer's and Lease::renew's)")
                     .Register(registry)),
        renew(prometheus::BuildHistogram()
                  .Name("dblock_renew_seconds")
                  .Help("Round trip of the renewals that succeeded")
                  .Register(registry)),
        renewal_failures(prometheus::BuildCounter()
                             .Name("dblock_renewal_failures_total")
                             .Help("Renewals that failed with an error (the lease not lost yet)")
                             .Register(registry)),
        lost(prometheus::BuildCounter()
                 .Name("dblock_leases_lost_total")
                 .Help("Leases found lost, by reason (expired, taken_over, removed, gone, "
                       "session_ended)")
                 .Register(registry)),
        unprotected(prometheus::BuildCounter()
                        .Name("dblock_unprotected_sections_total")
                        .Help("Leases released by their caller after they were lost: critical "
                              "sections that ran on without their lock")
                        .Register(registry)),
        leading(prometheus::BuildGauge()
                    .Name("dblock_election_leader")
                    .Help("Terms of the election this process leads now: 1 while it leads")
                    .Register(registry)),
        terms(prometheus::BuildCounter()
                  .Name("dblock_election_terms_total")
                  .Help("Terms of the election this process led that ended, by why (returned, "
                        "threw, lost, stopped)")
                  .Register(registry)) {}

  // The election's series: made on its first event, every `ended` at zero (Family::Add
  // returns the series already there).
  prometheus::Gauge& leader_of(std::string_view election) {
    const std::string name(election);
    for (const TermEnd why : kTermEnds) {
      terms.Add({{"election", name}, {"ended", std::string(to_string(why))}});
    }
    return leading.Add({{"election", name}});
  }

  // The series of `strategy`, made on first use.
  Series& of(std::string_view strategy) {
    for (std::size_t i = 0; i < kStrategies.size(); ++i) {
      if (kStrategies[i] != strategy) continue;
      if (Series* s = known[i].load(std::memory_order_acquire)) return *s;
      std::lock_guard lock(mu);
      if (Series* s = known[i].load(std::memory_order_relaxed)) return *s;
      Series* made = make(strategy);
      known[i].store(made, std::memory_order_release);
      return *made;
    }
    std::lock_guard lock(mu);
    auto it = others.find(strategy);
    if (it != others.end()) return *it->second;
    Series* made = make(strategy);
    others.emplace(std::string(strategy), made);
    return *made;
  }

  // Called with mu held. The series live as long as the registry's families, which keep them.
  Series* make(std::string_view strategy) {
    const std::string s(strategy);
    auto& made = series.emplace_back();
    for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
      const prometheus::Labels labels{{"strategy", s},
                                      {"outcome", std::string(to_string(kOutcomes[i]))}};
      made.acquisitions[i] = &acquisitions.Add(labels);
      made.wait[i] = &wait.Add(labels, options.acquire_wait_buckets);
    }
    const prometheus::Labels labels{{"strategy", s}};
    made.in_progress = &in_progress.Add(labels);
    made.held = &held.Add(labels);
    made.hold = &hold.Add(labels, options.hold_buckets);
    made.renewals = &renewals.Add(labels);
    made.renew = &renew.Add(labels, options.renew_buckets);
    made.renewal_failures = &renewal_failures.Add(labels);
    for (std::size_t i = 0; i < kReasons.size(); ++i) {
      made.lost[i] = &lost.Add({{"strategy", s}, {"reason", std::string(to_string(kReasons[i]))}});
    }
    made.unprotected = &unprotected.Add(labels);
    return &made;
  }

  PrometheusOptions options;
  prometheus::Family<prometheus::Counter>& acquisitions;
  prometheus::Family<prometheus::Histogram>& wait;
  prometheus::Family<prometheus::Gauge>& in_progress;
  prometheus::Family<prometheus::Gauge>& held;
  prometheus::Family<prometheus::Histogram>& hold;
  prometheus::Family<prometheus::Counter>& renewals;
  prometheus::Family<prometheus::Histogram>& renew;
  prometheus::Family<prometheus::Counter>& renewal_failures;
  prometheus::Family<prometheus::Counter>& lost;
  prometheus::Family<prometheus::Counter>& unprotected;
  prometheus::Family<prometheus::Gauge>& leading;
  prometheus::Family<prometheus::Counter>& terms;

  std::array<std::atomic<Series*>, kStrategies.size()> known{};
  std::mutex mu;
  std::deque<Series> series;  // owns every Series; a deque never moves its elements
  std::map<std::string, Series*, std::less<>> others;
};

PrometheusMetrics::PrometheusMetrics(prometheus::Registry& registry, PrometheusOptions options) {
  check_buckets(options.acquire_wait_buckets, "acquire_wait_buckets");
  check_buckets(options.hold_buckets, "hold_buckets");
  check_buckets(options.renew_buckets, "renew_buckets");
  impl_ = std::make_unique<Impl>(registry, std::move(options));
}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::acquire_started(const AcquireStarted& event) {
  impl_->of(event.strategy).in_progress->Increment();
}

void PrometheusMetrics::acquire_ended(const AcquireEnded& event) {
  Series& s = impl_->of(event.strategy);
  s.in_progress->Decrement();
  const std::size_t i = index_of(event.outcome, kOutcomes);
  if (i < kOutcomes.size()) {
    s.acquisitions[i]->Increment();
    s.wait[i]->Observe(seconds(event.waited));
  }
  if (event.outcome == AcquireOutcome::kAcquired) s.held->Increment();
}

void PrometheusMetrics::renewed(const Renewed& event) {
  Series& s = impl_->of(event.lease.strategy);
  s.renewals->Increment();
  s.renew->Observe(seconds(event.latency));
}

void PrometheusMetrics::renewal_failed(const RenewalFailed& event) {
  impl_->of(event.lease.strategy).renewal_failures->Increment();
}

void PrometheusMetrics::lost(const LeaseLost& event) {
  const std::size_t i = index_of(event.reason, kReasons);
  if (i < kReasons.size()) impl_->of(event.lease.strategy).lost[i]->Increment();
}

void PrometheusMetrics::released(const Released& event) {
  Series& s = impl_->of(event.lease.strategy);
  s.held->Decrement();
  s.hold->Observe(seconds(event.held_for));
  if (event.lost && !event.dropped) s.unprotected->Increment();
}

void PrometheusMetrics::term_began(const TermEvent& event) {
  impl_->leader_of(event.election).Increment();
}

void PrometheusMetrics::term_ended(const TermEvent& event) {
  impl_->leader_of(event.election).Decrement();
  impl_->terms
      .Add(
          {{"election", std::string(event.election)}, {"ended", std::string(to_string(event.why))}})
      .Increment();
}

}  // namespace dblock
