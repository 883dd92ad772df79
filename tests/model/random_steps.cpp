// SPDX-License-Identifier: Apache-2.0
// ModelRunner's with_lock step, the random step generator and the report.
#include <sstream>
#include <thread>

#include "enum_names.hpp"
#include "model_runner.hpp"

namespace dblock::testing {

namespace {

const char* name(WithLockFn fn) {
  constexpr auto kNames = detail::enum_names<WithLockFn::kRenewedPastTtl>(
      {"quick", "sleep_past_ttl", "sleep_past_ttl_intruder", "renewed_past_ttl"});
  return kNames.of(fn, "?").data();
}

const std::vector<std::string> kOwners = {"w",      "w ",      "W",       "x",
                                          "thread", "thread2", "proc2/w", "host2/w"};
const std::vector<std::string> kLockKeys = {"k0", "k1", "k2"};

}  // namespace

void ModelRunner::with_lock(const std::string& who, const std::string& key, WithLockFn fn,
                            const std::string& intruder) {
  begin("with_lock " + label(who) + " " + key + " fn=" + name(fn) +
        (fn == WithLockFn::kSleepPastTtlIntruder ? " intruder=" + label(intruder) : ""));
  AcquireSpec spec{
      who, key, milliseconds(300), fn == WithLockFn::kRenewedPastTtl, 0, milliseconds(0)};
  if (fn == WithLockFn::kQuick)
    spec.ttl = milliseconds(std::uniform_int_distribution(1, 5)(rng_) * 1000);
  const TruthRow* row = model_.truth().find(key);
  const bool same_owner = row != nullptr && row->hold_count > 0 && row->owner == owner(who);
  const bool pending = release_kept(who, key);
  const bool row_renewed = renewed(key);
  bool ran = false;
  bool held_at_end = false;
  const int id = next_handle_++;
  const auto from = ModelClock::now();
  std::optional<int> result;
  try {
    result = dblock::with_lock(*locks_[0], key, spec.wait, options(spec), [&](Lease& lease) -> int {
      ran = true;
      const auto got_at = ModelClock::now();
      const Tri held = model_.held_throughout(key, from, got_at, row_renewed);
      if (!pending && held == Tri::kYes && !same_owner) {
        fail("grant: with_lock got a key another owner held unexpired throughout");
      }
      const bool reentry = holds(who, key, lease.fencing_token());
      std::string problem = model_.check_grant(key, label(who), lease.fencing_token(), reentry);
      if (!problem.empty()) fail(problem);
      note("token " + std::to_string(lease.fencing_token()));
      Handle h{key, who, lease.fencing_token(), spec.ttl, spec.auto_renew, 0, std::nullopt, &lease};
      handles_.emplace(id, std::move(h));
      if (fn != WithLockFn::kQuick) std::this_thread::sleep_for(milliseconds(450));
      if (fn == WithLockFn::kSleepPastTtlIntruder) {
        refresh();
        const int taken = do_acquire(AcquireSpec{intruder, key, milliseconds(1000)});
        if (taken >= 0) {
          // The intruder writes under its fresh lease; the section's lease, past its TTL, must
          // not write after it.
          if (write_fenced(handles_.at(taken).lease(), key) != Fenced::kWritten) {
            fail("fence: a lease granted a moment ago could not fence a write");
          }
          handles_.at(taken).owned->release();
          handles_.erase(taken);
        }
        if (write_fenced(lease, key) == Fenced::kWritten) {
          fail("fence: a lease slept past its TTL committed a fenced write");
        }
      }
      refresh();
      const TruthRow* r = model_.truth().find(key);
      held_at_end = !lease.lost() && r != nullptr && r->owner == owner(who) &&
                    r->fencing_token == lease.fencing_token() && r->hold_count > 0 &&
                    r->remaining_ms > 0;
      handles_.erase(id);
      return 42;
    });
  } catch (const Error& e) {
    handles_.erase(id);
    note(std::string("threw ") + std::string(to_string(e.code())));
  }
  if (ran) forget_kept(who, key);  // its acquire sent a kept release first
  const Tri held = model_.held_throughout(key, from, ModelClock::now(), row_renewed);
  if (!ran && !pending && held == Tri::kNo) {
    fail("grant: with_lock did not get a key that was free throughout");
  }
  note(result ? "returned fn's result" : "returned nothing");
  if (ran) note(held_at_end ? "held to the end" : "lost during fn");
  if (ran && result && !held_at_end) {
    fail("with_lock: returned fn's result although the lease was lost during fn");
  }
  if (ran && !result && held_at_end && fn == WithLockFn::kQuick) {
    fail("with_lock: returned nothing although the lease was held throughout fn");
  }
  end();
}

milliseconds ModelRunner::pick_ttl() {
  static const milliseconds kTtls[] = {milliseconds(300), milliseconds(1000), milliseconds(5000),
                                       milliseconds(60000)};
  return kTtls[std::discrete_distribution<int>({30, 30, 20, 20})(rng_)];
}

int ModelRunner::pick_handle() {
  if (handles_.empty()) return -1;
  auto it = handles_.begin();
  std::advance(it, std::uniform_int_distribution<std::size_t>(0, handles_.size() - 1)(rng_));
  return it->first;
}

// Mostly an owner that already holds the key (re-entry) or a look-alike of it; else anyone.
std::string ModelRunner::pick_owner_for(const std::string& key) {
  std::vector<std::string> holders;
  for (const auto& [id, h] : handles_) {
    if (h.key == key) holders.push_back(h.who);
  }
  const int roll = std::uniform_int_distribution(0, 99)(rng_);
  if (left_out_.count("reentry")) holders.clear();
  if (!holders.empty() && roll < 45) {
    return holders[std::uniform_int_distribution<std::size_t>(0, holders.size() - 1)(rng_)];
  }
  if (!holders.empty() && roll < 65) {
    const std::string& h = holders.front();
    if ((h == "w" || h == "w " || h == "W") && !left_out_.count("lookalikes")) {
      const char* alike[] = {"w", "w ", "W"};
      return alike[std::uniform_int_distribution(0, 2)(rng_)];
    }
    return h.find("/w") != std::string::npos ? "w" : h;
  }
  return random_owner();
}

std::string ModelRunner::random_owner() {
  for (;;) {
    const std::string& who =
        kOwners[std::uniform_int_distribution<std::size_t>(0, kOwners.size() - 1)(rng_)];
    if (!left_out_.count("lookalikes") || (who != "w " && who != "W")) return who;
  }
}

void ModelRunner::leave_out(const std::string& list) {
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) left_out_.insert(list.substr(at, comma - at));
    at = comma + 1;
  }
}

void ModelRunner::random_step() {
  static const char* kKinds[] = {"acquire", "renew", "release", "drop",      "kill",    "outage",
                                 "clean",   "sleep", "claim",   "with_lock", "awaited", "fenced"};
  std::vector<double> weights = {40, 10, 16, 6, 3, 3, 4, 4, 1, 4, 6, 5};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (left_out_.count(kKinds[i])) weights[i] = 0;
  }
  int kind = std::discrete_distribution<int>(weights.begin(), weights.end())(rng_);
  if (handles_.size() >= 10 && kind == 0) kind = 2;  // keep the number of holds small
  if (handles_.empty() &&
      (kind == 1 || kind == 2 || kind == 3 || kind == 5 || kind == 10 || kind == 11)) {
    kind = 0;
  }
  const bool renewals = !left_out_.count("renew");
  auto random_spec = [&] {
    AcquireSpec s;
    s.key = std::uniform_int_distribution(0, 19)(rng_) == 0
                ? "c0"
                : kLockKeys[std::uniform_int_distribution<std::size_t>(0, 2)(rng_)];
    s.who = pick_owner_for(s.key);
    s.ttl = pick_ttl();
    s.auto_renew =
        renewals && s.ttl >= milliseconds(1000) && std::uniform_int_distribution(0, 99)(rng_) < 15;
    s.lock = std::uniform_int_distribution(0, 99)(rng_) < 20 ? 1 : 0;
    if (std::uniform_int_distribution(0, 99)(rng_) < 25) {
      s.wait = milliseconds(std::uniform_int_distribution(0, 150)(rng_));
    }
    return s;
  };
  switch (kind) {
    case 0:
      acquire(random_spec());
      break;
    case 1:
      renew(pick_handle(), pick_ttl());
      break;
    case 2:
      release(pick_handle());
      break;
    case 3:
      drop(pick_handle());
      break;
    case 4:
      kill_sessions();
      break;
    case 5: {
      const auto op =
          static_cast<OutageOp>(std::discrete_distribution<int>({50, 15, 15, 20})(rng_));
      outage(op, pick_handle(), random_spec());
      break;
    }
    case 6:
      clean(milliseconds(std::uniform_int_distribution(0, 200)(rng_)));
      break;
    case 7: {
      // Half the time just past the soonest expiry of a held row, when that is near.
      std::optional<milliseconds> next;
      const Truth& t = model_.truth();
      for (const auto& [key, row] : t.rows) {
        if (row.forever || row.hold_count <= 0 || row.remaining_ms <= 0) continue;
        const auto left = std::chrono::duration_cast<milliseconds>(
            t.latest_expiry(row) - ModelClock::now() + model_.margin() * 2);
        if (!next || left < *next) next = left;
      }
      if (next && *next <= milliseconds(1300) && std::uniform_int_distribution(0, 1)(rng_)) {
        sleep(std::max(*next, milliseconds(1)));
      } else {
        sleep(milliseconds(std::uniform_int_distribution(20, 300)(rng_)));
      }
      break;
    }
    case 8:
      claim(random_owner(), "c0");
      break;
    case 10: {
      // Another owner waits: the releaser's own would re-enter while the release is on its way.
      const int id = pick_handle();
      const std::string key = handles_.at(id).key;
      const Owner& releaser = owner(handles_.at(id).who);
      std::string waiter = pick_owner_for(key);
      while (owner(waiter) == releaser) waiter = random_owner();
      release_awaited(id, waiter, pick_ttl());
      break;
    }
    case 11:
      fenced_write(pick_handle());
      break;
    case 9:
    default: {
      const std::string key = kLockKeys[std::uniform_int_distribution<std::size_t>(0, 2)(rng_)];
      auto fn = static_cast<WithLockFn>(std::uniform_int_distribution(0, 3)(rng_));
      if (fn == WithLockFn::kRenewedPastTtl && !renewals) fn = WithLockFn::kQuick;
      std::string intruder = pick_owner_for(key);
      with_lock(pick_owner_for(key), key, fn, intruder);
      break;
    }
  }
}

std::string ModelRunner::report() const {
  std::ostringstream s;
  s << "pair " << backend_.name << ", seed " << seed_ << ", " << step_ << " steps\n";
  for (const auto& f : failures_) s << "  FAILED " << f << "\n";
  s << "last steps:\n";
  for (const auto& line : log_) s << "  " << line << "\n";
  return s.str();
}

std::string ModelRunner::stats() const {
  std::ostringstream s;
  for (const auto& [kind, n] : counts_) s << kind << "=" << n << " ";
  return s.str();
}

}  // namespace dblock::testing
