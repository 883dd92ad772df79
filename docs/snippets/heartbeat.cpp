#include <atomic>
#include <chrono>
#include <dblock/unique_key_lock.hpp>

bool handle_next_message();  // your code: one message of a queue; false when it is empty

// Renewal gated on progress: the lease is renewed only while the worker has finished a message in
// the last 20 s. A worker stuck inside handle_next_message() stops renewing, so its key is free
// for another replica a TTL later, instead of held for as long as the process lives.
bool consume_queue(dblock::UniqueKeyLock& locks) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  std::atomic<Clock::rep> last_beat{Clock::now().time_since_epoch().count()};
  dblock::LockOptions options;
  options.ttl = 15s;
  options.renew_if = [&last_beat] {  // asked on a renewer thread before each renewal
    return Clock::now() - Clock::time_point(Clock::duration(last_beat.load())) < 20s;
  };
  auto lease = locks.try_acquire("queue:orders", options);
  if (!lease) return false;  // another replica consumes
  const std::stop_token stop = lease->stop_token();
  while (!stop.stop_requested() && handle_next_message()) {
    last_beat = Clock::now().time_since_epoch().count();  // the heartbeat
  }
  return !stop.stop_requested();  // false: stopped, the lease ran out or was lost
}
