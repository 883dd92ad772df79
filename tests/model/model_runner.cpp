// SPDX-License-Identifier: Apache-2.0
#include "model_runner.hpp"

#include <atomic>
#include <sstream>
#include <thread>

#include "dblock/cleaner.hpp"
#include "dblock/migrator.hpp"

namespace dblock::testing {

namespace {

constexpr std::size_t kLogLines = 40;

std::string ms(milliseconds d) { return std::to_string(d.count()) + "ms"; }

}  // namespace

std::string label(const std::string& who) { return "'" + who + "'"; }

ModelRunner::ModelRunner(const Backend& backend, std::uint64_t seed, bool fair)
    : backend_(backend), seed_(seed), fair_(fair), rng_(seed), model_(milliseconds(60)) {
  tables_ = TableNames(unique_name("mdl") + "_");
  checker_ = backend_.connect();
  Migrator(*checker_, tables_).up();
  create_fenced_table();
  pool_ = std::make_unique<TaggedPool>(backend_, 4);
  for (int i = 0; i < 2; ++i) {
    locks_.push_back(std::make_unique<UniqueKeyLock>(
        pool_->pool(), UniqueKeyLockOptions{.tables = tables_, .fair = fair}));
  }
  const Owner me = Owner::current_thread();
  for (const char* name : {"w", "w ", "W", "x"}) owners_[name] = Owner::named(name);
  owners_["thread"] = me;
  owners_["thread2"] = Owner{me.host, me.process, "tid:1-00000000model2"};
  owners_["proc2/w"] = Owner{me.host, "1-0000000000model2", "name:w"};
  owners_["host2/w"] = Owner{"model-host-2", me.process, "name:w"};
  refresh();
}

ModelRunner::~ModelRunner() {
  handles_.clear();  // dropped leases release
  locks_.clear();
  pool_.reset();
  try {
    auto c = backend_.connect();
    backend_.drop_tables_with_prefix(*c, tables_.prefix());
  } catch (...) {
    // A failed test leaves its uniquely named tables behind.
  }
}

const Owner& ModelRunner::owner(const std::string& who) const { return owners_.at(who); }

LockOptions ModelRunner::options(const AcquireSpec& spec) const {
  LockOptions o;
  o.owner = owner(spec.who);
  o.ttl = spec.ttl;
  o.auto_renew = spec.auto_renew;
  return o;
}

void ModelRunner::begin(const std::string& what) {
  ++step_;
  current_ = "#" + std::to_string(step_) + " " + what;
  counts_[what.substr(0, what.find(' '))]++;
}

void ModelRunner::note(const std::string& outcome) { current_ += " -> " + outcome; }

void ModelRunner::fail(const std::string& problem) {
  failures_.push_back("step " + std::to_string(step_) + ": " + problem);
}

void ModelRunner::refresh() { model_.observe(read_truth(*checker_, tables_)); }

void ModelRunner::end() {
  refresh();
  std::vector<HandleView> views;
  for (auto& [id, h] : handles_) {
    views.push_back(HandleView{id, h.key, h.who, owner(h.who), h.token, h.lease().lost()});
  }
  for (auto& problem : model_.check_invariants(views)) fail(problem);
  if (fair_) {
    const auto queued = checker_->execute("SELECT count(*) AS n FROM " +
                                          tables_.qualified(backend_.dialect, "lock_waiters"));
    if (queued.int64_at(0, "n") != 0) {
      fail("queue: " + std::to_string(queued.int64_at(0, "n")) +
           " waiter place(s) left behind by a step that returned");
    }
  }
  log_.push_back(current_);
  if (log_.size() > kLogLines) log_.pop_front();
}

bool ModelRunner::renewed(const std::string& key) {
  const TruthRow* row = model_.truth().find(key);
  if (row == nullptr) return false;
  for (auto& [id, h] : handles_) {
    if (h.key == key && h.auto_renew && h.token == row->fencing_token &&
        owner(h.who) == row->owner && !h.lease().lost()) {
      return true;
    }
  }
  return false;
}

bool ModelRunner::holds(const std::string& who, const std::string& key, std::int64_t token,
                        int except) const {
  for (const auto& [id, h] : handles_) {
    if (id != except && h.key == key && h.token == token && owner(h.who) == owner(who)) {
      return true;
    }
  }
  return false;
}

int ModelRunner::others_of_owner(const std::string& who, const std::string& key, std::int64_t token,
                                 int except) const {
  int n = 0;
  for (const auto& [id, h] : handles_) {
    if (id != except && h.key == key && h.token == token && owner(h.who) == owner(who)) ++n;
  }
  return n;
}

bool ModelRunner::release_kept(const std::string& who, const std::string& key) const {
  for (const auto& kept : pending_) {
    if (std::get<1>(kept) == key && std::get<2>(kept) == owner(who).to_string()) return true;
  }
  return false;
}

void ModelRunner::forget_kept(const std::string& who, const std::string& key) {
  std::erase_if(pending_, [&](const PendingKey& kept) {
    return std::get<1>(kept) == key && std::get<2>(kept) == owner(who).to_string();
  });
}

int ModelRunner::do_acquire(const AcquireSpec& spec) {
  const Owner& o = owner(spec.who);
  const bool pending = release_kept(spec.who, spec.key);
  const TruthRow* row = model_.truth().find(spec.key);
  const bool same_owner = row != nullptr && row->hold_count > 0 && row->owner == o;
  const std::int64_t row_token = row != nullptr ? row->fencing_token : 0;
  const bool row_renewed = renewed(spec.key);
  const auto from = ModelClock::now();
  std::optional<Lease> lease;
  if (spec.wait.count() < 0) {
    lease = locks_[spec.lock]->try_acquire(spec.key, options(spec));
  } else {
    lease = locks_[spec.lock]->acquire(spec.key, spec.wait, options(spec));
  }
  const auto to = ModelClock::now();
  forget_kept(spec.who, spec.key);  // the acquire sent it first (it threw otherwise)
  const Tri held = model_.held_throughout(spec.key, from, to, row_renewed);
  std::ostringstream what;
  what << label(spec.who) << " " << spec.key;
  if (pending) {
    // The kept release went first: the row may have changed before the acquire.
  } else if (held == Tri::kNo && !lease) {
    fail("grant: " + what.str() + " was refused although the row was free or expired throughout");
  } else if (held == Tri::kYes && !same_owner && lease) {
    fail("grant: " + what.str() + " got the key (token " + std::to_string(lease->fencing_token()) +
         ") although " + row->owner.thread + " held it unexpired throughout");
  } else if (held == Tri::kYes && same_owner && !row->forever && !lease) {
    fail("grant: " + what.str() + " could not re-enter its own unexpired hold");
  } else if (held == Tri::kYes && same_owner && lease && lease->fencing_token() != row_token) {
    fail("token: " + what.str() + " re-entered with token " +
         std::to_string(lease->fencing_token()) + " instead of the row's " +
         std::to_string(row_token));
  }
  if (!lease) {
    note("refused");
    counts_["refused"]++;
    return -1;
  }
  const std::int64_t token = lease->fencing_token();
  const bool reentry = holds(spec.who, spec.key, token);
  std::string problem = model_.check_grant(spec.key, label(spec.who), token, reentry);
  if (!problem.empty()) {
    for (const auto& kept : pending_) {
      if (std::get<1>(kept) == spec.key && std::get<2>(kept) == o.to_string() &&
          std::get<3>(kept) == token) {
        problem += "; it re-entered the hold whose release lock ";
        problem += std::get<0>(kept) ? "B" : "A";
        problem += " kept after an outage";
      }
    }
    fail(problem);
  }
  note("token " + std::to_string(token) + (reentry ? " (re-entry)" : ""));
  counts_[reentry ? "reentered" : "granted"]++;
  const int id = next_handle_++;
  Handle h{spec.key, spec.who, token, spec.ttl, spec.auto_renew, spec.lock, std::move(lease)};
  handles_.emplace(id, std::move(h));
  note("#" + std::to_string(id));
  return id;
}

int ModelRunner::acquire(const AcquireSpec& spec) {
  std::ostringstream s;
  s << "acquire " << label(spec.who) << " " << spec.key << " ttl=" << ms(spec.ttl)
    << (spec.auto_renew ? " auto_renew" : "") << " lock=" << (spec.lock ? 'B' : 'A')
    << (spec.wait.count() < 0 ? " try" : " wait=" + ms(spec.wait));
  begin(s.str());
  int id = -1;
  try {
    id = do_acquire(spec);
  } catch (const Error& e) {
    fail(std::string("error: acquire threw: ") + e.what());
  }
  end();
  return id;
}

void ModelRunner::renew(int id, milliseconds ttl) {
  Handle& h = handles_.at(id);
  begin("renew #" + std::to_string(id) + " (" + label(h.who) + " " + h.key + ") ttl=" + ms(ttl));
  const TruthRow* row = model_.truth().find(h.key);
  const bool ours = row != nullptr && row->owner == owner(h.who) && row->fencing_token == h.token;
  const bool row_renewed = renewed(h.key);
  const auto from = ModelClock::now();
  try {
    const bool ok = h.lease().renew(ttl);
    const auto to = ModelClock::now();
    const Tri held = ours ? model_.held_throughout(h.key, from, to, row_renewed) : Tri::kNo;
    note(ok ? "renewed" : "not held");
    if (held == Tri::kYes && !ok) fail("renew: a hold unexpired throughout was not renewed");
    if (held == Tri::kNo && ok) fail("renew: a hold the row no longer had was renewed");
    if (!ok && !h.lease().lost()) fail("lost(): renew() returned false but lost() is false");
    end();
    const TruthRow* after = model_.truth().find(h.key);
    if (ok && after != nullptr && after->owner == owner(h.who) && after->fencing_token == h.token &&
        model_.truth().latest_expiry(*after) + model_.margin() < from + ttl) {
      fail("renew: the row expires in " + std::to_string(after->remaining_ms) +
           " ms, sooner than the " + ms(ttl) + " renewed");
    }
  } catch (const Error& e) {
    fail(std::string("error: renew threw: ") + e.what());
    end();
  }
}

std::optional<ReleaseOutcome> ModelRunner::expected_release(int id, ModelClock::time_point from,
                                                            ModelClock::time_point to) {
  Handle& h = handles_.at(id);
  const TruthRow* row = model_.truth().find(h.key);
  const bool ours = row != nullptr && row->owner == owner(h.who) && row->fencing_token == h.token &&
                    row->hold_count > 0;
  if (!ours) return ReleaseOutcome::kNotHeld;
  switch (model_.held_throughout(h.key, from, to, renewed(h.key))) {
    case Tri::kNo:
      return ReleaseOutcome::kNotHeld;
    case Tri::kYes:
      return row->hold_count > 1 && others_of_owner(h.who, h.key, h.token, id) > 0
                 ? ReleaseOutcome::kDecremented
                 : ReleaseOutcome::kReleased;
    case Tri::kUnknown:
      return std::nullopt;
  }
  return std::nullopt;
}

void ModelRunner::check_row_after_release(const std::string& key, std::int64_t token,
                                          std::int64_t hold_before, ReleaseOutcome outcome) {
  const TruthRow* row = model_.truth().find(key);
  if (row == nullptr || row->fencing_token != token) return;
  if (outcome == ReleaseOutcome::kReleased && row->hold_count != 0) {
    fail("release: kReleased but the row still has hold_count " + std::to_string(row->hold_count));
  }
  if (outcome == ReleaseOutcome::kDecremented && row->hold_count != hold_before - 1) {
    fail("release: kDecremented but hold_count went from " + std::to_string(hold_before) + " to " +
         std::to_string(row->hold_count));
  }
}

ModelRunner::GiveBack ModelRunner::begin_give_back(int id, const std::string& verb,
                                                   const std::string& more) {
  Handle& h = handles_.at(id);
  begin(verb + " #" + std::to_string(id) + " (" + label(h.who) + " " + h.key + ")" + more);
  const TruthRow* row = model_.truth().find(h.key);
  return GiveBack{h, h.key, h.token, row != nullptr ? row->hold_count : 0};
}

void ModelRunner::release(int id) {
  auto [h, key, token, hold_before] = begin_give_back(id, "release");
  const auto from = ModelClock::now();
  try {
    const ReleaseOutcome got = h.lease().release();
    const auto to = ModelClock::now();
    const auto want = expected_release(id, from, to);
    note(std::string(to_string(got)));
    if (want && got != *want) {
      fail("release: got " + std::string(to_string(got)) + ", the model expects " +
           std::string(to_string(*want)));
    }
    handles_.erase(id);
    end();
    check_row_after_release(key, token, hold_before, got);
  } catch (const Error& e) {
    fail(std::string("error: release threw: ") + e.what());
    handles_.erase(id);
    end();
  }
}

void ModelRunner::release_awaited(int id, const std::string& waiter, milliseconds ttl) {
  // An owner of another process or host waits through the other lock object, as it would: it
  // learns of the release from the server (a notification, polling, or in fair mode on
  // PostgreSQL the release's own grant), not from the releaser's lock object.
  const Handle& held = handles_.at(id);
  const bool apart = owner(waiter).process != owner(held.who).process ||
                     owner(waiter).host != owner(held.who).host;
  const int lock = apart ? 1 - held.lock : held.lock;
  auto [h, key, token, hold_before] = begin_give_back(
      id, "release",
      " awaited by " + label(waiter) + " ttl=" + ms(ttl) + " lock=" + (lock ? "B" : "A"));
  if (apart) counts_["awaited_apart"]++;
  const std::string releaser = h.who;
  AcquireSpec spec{waiter, key, ttl, false, lock, milliseconds(1500)};
  std::optional<Lease> got;
  std::optional<std::string> waiter_error;
  std::atomic<bool> started{false};
  std::thread waiting([&] {
    started = true;
    try {
      got = locks_[lock]->acquire(key, spec.wait, options(spec));
    } catch (const Error& e) {
      waiter_error = e.what();
    }
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(100));  // its first try is over: it sleeps or holds
  std::optional<ReleaseOutcome> outcome;
  const auto from = ModelClock::now();
  try {
    outcome = h.lease().release();
    const auto want = expected_release(id, from, ModelClock::now());
    note(std::string(to_string(*outcome)));
    if (want && *outcome != *want) {
      fail("release: got " + std::string(to_string(*outcome)) + ", the model expects " +
           std::string(to_string(*want)));
    }
  } catch (const Error& e) {
    fail(std::string("error: release threw: ") + e.what());
  }
  handles_.erase(id);
  waiting.join();
  if (waiter_error) fail("error: the waiter's acquire threw: " + *waiter_error);
  if (got) {
    const std::int64_t granted = got->fencing_token();
    const bool reentry = holds(waiter, key, granted);
    note("waiter: token " + std::to_string(granted) + (reentry ? " (re-entry)" : ""));
    const std::string problem = model_.check_grant(key, label(waiter), granted, reentry);
    if (!problem.empty()) fail(problem);
    counts_["handed"]++;
    const int handle = next_handle_++;
    handles_.emplace(handle, Handle{key, waiter, granted, ttl, false, lock, std::move(got)});
  } else {
    note("waiter: refused");
    // Nothing else takes keys meanwhile: a key freed while the waiter slept is the waiter's.
    if (outcome == ReleaseOutcome::kReleased) {
      fail("hand-over: " + label(releaser) + "'s release freed " + key + " but " + label(waiter) +
           ", asleep in acquire, did not get it within " + ms(spec.wait));
    }
  }
  end();
  if (outcome && !got) check_row_after_release(key, token, hold_before, *outcome);
}

void ModelRunner::drop(int id) {
  auto [h, key, token, hold_before] = begin_give_back(id, "drop");
  const auto from = ModelClock::now();
  h.owned.reset();  // the destructor releases
  const auto want = expected_release(id, from, ModelClock::now());
  handles_.erase(id);
  end();
  if (want) check_row_after_release(key, token, hold_before, *want);
}

void ModelRunner::kill_sessions() {
  begin("kill_sessions");
  note(std::to_string(pool_->kill_sessions(*checker_)) + " killed");
  end();
}

void ModelRunner::outage(OutageOp op, int id, const AcquireSpec& spec) {
  static const char* kNames[] = {"release", "drop", "renew", "acquire"};
  std::string what = std::string("outage ") + kNames[static_cast<int>(op)];
  if (op == OutageOp::kAcquire) {
    what += " " + label(spec.who) + " " + spec.key + " lock=" + (spec.lock ? "B" : "A");
  } else {
    Handle& h = handles_.at(id);
    what += " #" + std::to_string(id) + " (" + label(h.who) + " " + h.key +
            " lock=" + (h.lock ? "B" : "A") + ")";
  }
  begin(what);
  pool_->refuse_connections(true);
  pool_->kill_sessions(*checker_);
  bool threw = false;
  try {
    switch (op) {
      case OutageOp::kAcquire:
        locks_[spec.lock]->try_acquire(spec.key, options(spec));
        break;
      case OutageOp::kRenew:
        handles_.at(id).lease().renew(handles_.at(id).ttl);
        break;
      case OutageOp::kRelease:
      case OutageOp::kDrop: {
        Handle& h = handles_.at(id);
        pending_.insert(PendingKey{h.lock, h.key, owner(h.who).to_string(), h.token});
        if (op == OutageOp::kRelease) {
          h.lease().release();
        } else {
          h.owned.reset();
          threw = true;  // a destructor says nothing
        }
        handles_.erase(id);
        break;
      }
    }
  } catch (const Error& e) {
    threw = true;
    note(std::string("threw ") + std::string(to_string(e.code())));
    if (op == OutageOp::kRelease) handles_.erase(id);
  }
  pool_->refuse_connections(false);
  if (!threw) fail("outage: the operation succeeded with every session killed and none to open");
  end();
}

void ModelRunner::clean(milliseconds grace) {
  begin("clean grace=" + ms(grace));
  const Truth before = model_.truth();
  const auto from = ModelClock::now();
  CleanOptions options;
  options.grace = grace;
  CleanResult r = dblock::clean(*checker_, tables_, options);
  const auto to = ModelClock::now();
  note(std::to_string(r.deleted) + " deleted");
  end();
  for (const auto& [key, row] : before.rows) {
    if (row.forever) continue;
    const bool gone = model_.truth().find(key) == nullptr;
    if (!gone && before.latest_expiry(row) + grace + model_.margin() < from) {
      fail("clean: " + key + " expired more than the grace ago but was not deleted");
    }
    if (gone && before.earliest_expiry(row) + grace - model_.margin() > to) {
      fail("clean: " + key + " was deleted inside its grace period (or unexpired)");
    }
  }
}

void ModelRunner::sleep(milliseconds d) {
  begin("sleep " + ms(d));
  std::this_thread::sleep_for(d);
  end();
}

void ModelRunner::claim(const std::string& who, const std::string& key) {
  begin("claim " + label(who) + " " + key);
  const bool row_renewed = renewed(key);
  const auto from = ModelClock::now();
  try {
    auto c = locks_[0]->claim(key, ClaimOptions{.owner = owner(who)});
    const Tri held = model_.held_throughout(key, from, ModelClock::now(), row_renewed);
    if (held == Tri::kNo && !c) fail("claim: refused although the key was free throughout");
    if (held == Tri::kYes && c) fail("claim: granted although the key was held throughout");
    if (c) {
      note("token " + std::to_string(c->fencing_token));
      std::string problem = model_.check_grant(key, label(who), c->fencing_token, false);
      if (!problem.empty()) fail(problem);
      Owner tagged = owner(who);
      tagged.thread = "claim:" + tagged.thread;
      model_.claimed(key, tagged, c->fencing_token);
    } else {
      note("refused");
    }
  } catch (const Error& e) {
    fail(std::string("error: claim threw: ") + e.what());
  }
  end();
}

}  // namespace dblock::testing
