// SPDX-License-Identifier: Apache-2.0
// Fair waiting's queue place: a fair waiter's place in its key's queue (lock_waiters), from its
// first refused try until it leaves (when this object ends: with the key, out of time, or by an
// error). Registering again (a refresh, or a resend after a lost reply) sends the same waiter id,
// so the waiter keeps one place. A statement that may have taken the place and got no answer (its
// reply lost, say) leaves the place in doubt: this object then sends the leave all the same when
// it ends. The place's id is the waiter's lease id, and the place carries the lease a release
// may grant the waiter (its TTL, lock-delay, metadata) and a stamp of the waiter's clock
// (sent_us) for each write, which a grant hands back: the grant is this waiter's to take only
// for its latest (a later refresh may have put the place back after the grant took it). A waiter
// that leaves with a grant it did not take frees the key. Explained in docs/locks/fair-waiting.md
// and docs/internals/waiting.md. Internal.
//
//   QueuePlace place(impl, info, clock);
//   place.join();                        // refused: take a place, then refresh it in time
//   if (!place.fresh()) place.join();
//   // ~QueuePlace: leaves the queue
//
// Thread-safety: one waiter's, used by the acquiring thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "clock.hpp"
#include "lease_core.hpp"
#include "unique_key/lock_impl.hpp"

namespace dblock::detail {

class QueuePlace {
 public:
  // `info` and `metadata`: the lease the waiter asks for (its lease id is the place's id); both
  // must outlive this object.
  QueuePlace(detail::UniqueKeyLockCore& impl, const LeaseInfo& info, const std::string& metadata,
             Clock& clock);
  // Leaves the queue, if this waiter has (or may have) a place; never throws.
  ~QueuePlace();
  QueuePlace(const QueuePlace&) = delete;
  QueuePlace& operator=(const QueuePlace&) = delete;

  const std::string& id() const noexcept { return id_; }
  // The waiter got the key, and the acquire took its place away already (acquire_leaves_queue).
  void left() noexcept {
    got_key();
    seq_.reset();
  }
  // The waiter got the key (for the waiter_left event; whether the place is gone says left()).
  void got_key() noexcept;
  // Runs `send`, a statement that may take the place (join(), or an acquire that joins): if it
  // throws, the server may have committed the place all the same.
  template <class Send>
  auto taking(Send&& send) {
    in_doubt_ = true;
    auto answer = send();
    in_doubt_ = false;
    return answer;
  }
  std::optional<std::int64_t> seq() const noexcept { return seq_; }
  // Registered and not yet due for a refresh.
  bool fresh() const;
  // Registered at `seq` by a statement sent at `sent` (an acquire that joins the queue, with
  // `sent_us` from stamp()).
  void placed(std::int64_t seq, Clock::time_point sent);
  // The stamp of a statement that writes the place, about to be sent: the waiter's clock in
  // microseconds (BootClock), taken before the send. Remembered as the latest.
  std::int64_t stamp();
  // A grant (a release's, in its own statement) for the write stamped `sent_us` is this
  // waiter's to take without a statement: that write is the latest.
  bool latest(std::int64_t sent_us) const noexcept { return sent_us == stamped_; }
  // Registers, or refreshes the place.
  void join();

 private:
  detail::UniqueKeyLockCore& impl_;
  const LeaseInfo& info_;
  const std::string& metadata_;
  Clock& clock_;
  std::int64_t stamped_ = -1;  // the latest stamp()
  std::string id_;
  std::optional<std::int64_t> seq_;
  bool in_doubt_ = false;  // a statement that may have taken the place got no answer
  Clock::time_point refreshed_{};
  // Events (dblock/observer.hpp): the place number waiter_queued reported, until waiter_left.
  std::optional<std::int64_t> reported_;
  void report_left(bool got_key) noexcept;
};

}  // namespace dblock::detail
