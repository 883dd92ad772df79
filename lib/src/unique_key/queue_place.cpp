// SPDX-License-Identifier: Apache-2.0
// QueuePlace, a fair waiter's place in its key's queue: purpose and thread-safety in
// queue_place.hpp.
#include "unique_key/queue_place.hpp"

#include <chrono>
#include <vector>

#include "boot_clock.hpp"
#include "dblock/error.hpp"
#include "metadata.hpp"
#include "observe.hpp"
#include "strategy_rules.hpp"
#include "ttl_lease.hpp"

namespace dblock::detail {

QueuePlace::QueuePlace(detail::UniqueKeyLockCore& impl, const LeaseInfo& info,
                       const std::string& metadata, Clock& clock)
    : impl_(impl), info_(info), metadata_(metadata), clock_(clock), id_(info.lease_id) {}

QueuePlace::~QueuePlace() {
  report_left(false);  // unless got_key() reported it
  if (!seq_ && !in_doubt_) return;
  try {
    // Also frees a grant this waiter did not take (the key, then, carries its lease id).
    const std::vector<Arg> args = owner_args(
        info_.owner,
        {{"waiter_id", Value(id_)}, {"channel", Value(impl_.channel)}, {"key", Value(info_.key)}});
    impl_.run(&detail::UniqueKeyLockCore::Statements::leave, args, true);
  } catch (const Error&) {
    // The place expires by itself within waiter_ttl.
  }
}

void QueuePlace::placed(std::int64_t seq, Clock::time_point sent) {
  seq_ = seq;
  refreshed_ = sent;
  if (reported_) return;  // a refresh keeps the place
  reported_ = seq;
  const WaiterEvent event{"unique_key", info_.key, id_, seq, false};
  report_to_acquisition([&](Observer& o) { o.waiter_queued(event); });
}

void QueuePlace::got_key() noexcept { report_left(true); }

void QueuePlace::report_left(bool got_key) noexcept {
  if (!reported_) return;
  const WaiterEvent event{"unique_key", info_.key, id_, *reported_, got_key};
  reported_.reset();
  report_to_acquisition([&](Observer& o) { o.waiter_left(event); });
}

bool QueuePlace::fresh() const {
  return seq_ && clock_.now() < refreshed_ + impl_.options.waiter_ttl / 3;
}

std::int64_t QueuePlace::stamp() {
  stamped_ =
      std::chrono::floor<std::chrono::microseconds>(BootClock::now().time_since_epoch()).count();
  return stamped_;
}

void QueuePlace::join() {
  const auto sent = clock_.now();
  const std::vector<Arg> args = owner_args(
      info_.owner, {{"key", Value(info_.key)},
                    {"waiter_id", Value(id_)},
                    {"ttl_ms", Value(static_cast<std::int64_t>(impl_.options.waiter_ttl.count()))},
                    {"lease_ttl_ms", Value(static_cast<std::int64_t>(info_.ttl.count()))},
                    {"lock_delay_ms", Value(static_cast<std::int64_t>(info_.lock_delay.count()))},
                    {"metadata", metadata_param(metadata_)},
                    {"sent_us", Value(stamp())}});
  auto r = taking(
      [&] { return impl_.run(&detail::UniqueKeyLockCore::Statements::enqueue, args, true); });
  if (!r) return;  // contended: tried again at the next refresh
  if (auto seq = returned_id(*r, impl_.rows, "seq")) placed(*seq, sent);
}

}  // namespace dblock::detail
