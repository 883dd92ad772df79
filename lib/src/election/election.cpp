// SPDX-License-Identifier: Apache-2.0
// Election (dblock/election.hpp): a candidate's campaign loop over a UniqueKeyLock of its own,
// the term handed to the leader's work, and the reads of who leads.
//
// Thread-safety: as dblock/election.hpp says; the process-wide list of campaigning candidates
// is guarded by its mutex.
#include "dblock/election.hpp"

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "any_stop.hpp"
#include "dblock/error.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/unique_key_lock.hpp"
#include "observe.hpp"
#include "random.hpp"
#include "unique_key/candidacy.hpp"
#include "unique_key/lease.hpp"

namespace dblock {

namespace {

// What Owner::named puts before a candidate's name in the owner_thread column.
constexpr std::string_view kNamed = "name:";

// The metadata of a leader's row: {"leader_value": VALUE}.
constexpr const char* kValueField = "leader_value";

void check_options(const std::string& name, const ElectionOptions& o) {
  validate_lock_key(name);
  if (o.value.size() > 4096) {
    throw Error(ErrorCode::kInvalidArgument,
                "the election value has " + std::to_string(o.value.size()) +
                    " bytes; the limit is 4096: publish an address or an id, not a document");
  }
  if (o.candidate.size() > 200) {
    throw Error(ErrorCode::kInvalidArgument, "the candidate name has " +
                                                 std::to_string(o.candidate.size()) +
                                                 " bytes; the limit is 200");
  }
  if (o.ttl < std::chrono::milliseconds(100)) {
    throw Error(ErrorCode::kInvalidArgument,
                "the election TTL is " + std::to_string(o.ttl.count()) +
                    " ms; give it 100 ms or more (a leader renews every third of it)");
  }
  if (o.rejoin_after.count() < 0 || o.rejoin_after > std::chrono::hours(1)) {
    throw Error(ErrorCode::kInvalidArgument, "rejoin_after must be 0 to 1 hour");
  }
  if (o.poll < std::chrono::milliseconds(1) || o.poll > std::chrono::minutes(1)) {
    throw Error(ErrorCode::kInvalidArgument, "the election's poll must be 1 ms to 1 minute");
  }
}

std::string value_metadata(const std::string& value) {
  try {
    return nlohmann::json{{kValueField, value}}.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::kInvalidArgument,
                "the election value is not valid UTF-8; encode binary values (hex, base64) first");
  }
}

std::string value_of(const std::string& metadata) {
  const auto parsed = nlohmann::json::parse(metadata, nullptr, false);
  if (parsed.is_object() && parsed.contains(kValueField) && parsed[kValueField].is_string()) {
    return parsed[kValueField].get<std::string>();
  }
  return {};
}

// The candidates campaigning in this process, so that two Election objects never campaign as
// one owner (their holds would be one reentrant hold: two leaders).
class Campaigning {
 public:
  explicit Campaigning(std::string id) : id_(std::move(id)) {
    std::lock_guard lock(mu());
    if (!ids().insert(id_).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  "another Election of this process campaigns under the same candidate name "
                  "for this election; give each its own ElectionOptions::candidate (or leave it "
                  "empty for a random one)");
    }
  }
  ~Campaigning() {
    std::lock_guard lock(mu());
    ids().erase(id_);
  }
  Campaigning(const Campaigning&) = delete;
  Campaigning& operator=(const Campaigning&) = delete;

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::set<std::string>& ids() {
    static std::set<std::string> s;
    return s;
  }
  std::string id_;
};

// Sleeps `d` unless `stop` is requested first.
void pause(std::chrono::milliseconds d, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
}

}  // namespace

namespace detail {

class ElectionCore {
 public:
  ElectionCore(ConnectionSource& source_, std::string name_, ElectionOptions options_)
      : source(source_),
        name(std::move(name_)),
        options(std::move(options_)),
        candidate(options.candidate.empty() ? "candidate-" + random_hex(12) : options.candidate),
        owner(Owner::named(candidate)),
        lock(source, lock_options(source, options)) {
    lease_options.owner = owner;
    lease_options.ttl = options.ttl;
    lease_options.stop_margin = options.stop_margin;
    lease_options.renew_if = options.renew_if;
    lease_options.metadata = value_metadata(options.value);
    lease_options.observer = options.observer;  // the process-wide one is added by the lock
  }

  // Candidates waiting for the name poll at options.poll where no notification wakes them.
  static UniqueKeyLockOptions lock_options(const ConnectionSource& source,
                                           const ElectionOptions& o) {
    const bool woken = o.notify && source.dialect() == Dialect::kPostgreSQL;
    UniqueKeyLockOptions lo;
    lo.tables = o.tables;
    lo.notify = o.notify;
    lo.backoff =
        BackoffPolicy{o.poll, woken ? std::max(o.poll, std::chrono::milliseconds(500)) : o.poll,
                      std::min(o.poll, std::chrono::milliseconds(5))};
    return lo;
  }

  void report(const std::exception& e) const noexcept {
    if (!options.on_error) return;
    try {
      options.on_error(e);
    } catch (...) {
      // on_error must not throw; a campaign never ends for it.
    }
  }

  ConnectionSource& source;
  const std::string name;
  const ElectionOptions options;
  const std::string candidate;  // its name, as the owner column shows it
  const Owner owner;
  UniqueKeyLock lock;
  LockOptions lease_options;
  std::mutex term_mu;
  Term* term = nullptr;  // the term this candidate leads now (under term_mu)
};

}  // namespace detail

struct Term::State {
  Lease& lease;
  detail::AnyStop stop;  // the lease's stop, the campaign's, or resign()
  std::mutex mu;
  std::optional<std::string> successor;  // hand_off()'s candidate (under mu)

  State(Lease& l, const std::stop_token& campaign) : lease(l), stop({l.stop_token(), campaign}) {}
};

Term::Term(Lease& lease, std::stop_token campaign_stop)
    : state_(std::make_unique<State>(lease, campaign_stop)) {}
Term::~Term() = default;
std::int64_t Term::number() const { return state_->lease.fencing_token(); }
std::stop_token Term::stop_token() const noexcept {
  // The lease's own token looks at the clock as it is asked for: a process that wakes from a
  // pause past the stop deadline is stopped here, before the renewer's watchdog has run.
  try {
    (void)state_->lease.stop_token();
  } catch (...) {
    // Not while the term lasts: its lease is never empty.
  }
  return state_->stop.token();
}
const Lease& Term::lease() const noexcept { return state_->lease; }
void Term::resign() const noexcept { state_->stop.request_stop(); }
void Term::hand_off(std::string candidate) const {
  {
    std::lock_guard lock(state_->mu);
    state_->successor = std::move(candidate);
  }
  state_->stop.request_stop();
}

Election::Election(ConnectionSource& source, std::string name, ElectionOptions options) {
  check_options(name, options);
  core_ = std::make_unique<detail::ElectionCore>(source, std::move(name), std::move(options));
}

Election::~Election() = default;

const std::string& Election::name() const noexcept { return core_->name; }
const Owner& Election::candidate() const noexcept { return core_->owner; }

bool Election::hand_off(std::string candidate) {
  std::lock_guard lock(core_->term_mu);
  if (core_->term == nullptr) return false;
  core_->term->hand_off(std::move(candidate));
  return true;
}

void Election::campaign(const std::function<void(const Term&)>& lead, std::stop_token stop) {
  const auto& o = core_->options;
  Campaigning registered(o.tables.schema() + "." + o.tables.prefix() + "\n" + core_->name + "\n" +
                         core_->owner.thread);
  Backoff backoff(o.retry);
  // Each acquire waits at most this long, so a stop is seen that soon while no one resigns, and
  // the candidate's place for hand-offs is refreshed that often (it lasts 3 s).
  constexpr auto kWaitSlice = std::chrono::milliseconds(1000);
  static_assert(kWaitSlice * 2 < detail::Candidacy::kLasting);
  std::optional<detail::Candidacy> candidacy;
  if (o.hand_offs) candidacy.emplace(core_->lock, core_->name, core_->lease_options);
  while (!stop.stop_requested()) {
    if (candidacy) {
      try {
        candidacy->offer();
      } catch (const Error& e) {
        // Other errors: the acquire below meets them too, and reports them.
        if (e.code() == ErrorCode::kUndefinedTable) {
          candidacy.reset();
          core_->report(Error(ErrorCode::kUndefinedTable,
                              std::string("this candidate campaigns without registering for "
                                          "hand-offs, which need migration 0010 (run `dblock "
                                          "migrate up`): ") +
                                  e.what()));
        }
      }
    }
    std::optional<Lease> lease;
    try {
      lease = core_->lock.acquire(core_->name, kWaitSlice, core_->lease_options);
      backoff.reset();
    } catch (const Error& e) {
      core_->report(e);
      pause(backoff.next(std::chrono::milliseconds::max()), stop);
      continue;
    }
    if (!lease) continue;
    const std::int64_t number = lease->fencing_token();
    const std::stop_token lease_stop = lease->stop_token();
    // The observers the term's lease reports to (none installed: nothing is made).
    const detail::Observers observers = detail::observers_for(core_->lease_options);
    const auto elected_at = std::chrono::steady_clock::now();
    TermEvent event{
        core_->name, core_->candidate, number, std::chrono::nanoseconds(0), TermEnd::kReturned, {}};
    observers.each([&](Observer& each) { each.term_began(event); });
    TermEnd why = TermEnd::kReturned;
    std::optional<std::string> successor;  // Term::hand_off's or Election::hand_off's candidate
    if (!stop.stop_requested()) {
      Term term(*lease, stop);
      {
        std::lock_guard lock(core_->term_mu);
        core_->term = &term;
      }
      try {
        lead(term);
      } catch (const std::exception& e) {
        core_->report(e);
        why = TermEnd::kThrew;
      } catch (...) {
        why = TermEnd::kThrew;
      }
      {
        std::lock_guard lock(core_->term_mu);
        core_->term = nullptr;
      }
      std::lock_guard lock(term.state_->mu);
      successor = std::move(term.state_->successor);
    }
    if (stop.stop_requested()) {
      why = TermEnd::kStopped;
    } else if (lease_stop.stop_requested() && why == TermEnd::kReturned) {
      why = TermEnd::kLost;
    }
    std::optional<detail::HandedOff> handed;
    try {
      if (successor) {
        // The work has returned: the name goes to the candidate in one statement.
        // Candidates own their rows as Owner::named(candidate): its thread is "name:" + it.
        handed = detail::release_handing_off(
            *lease, successor->empty() ? std::string() : std::string(kNamed) + *successor);
        if (!handed) {
          core_->report(Error(
              ErrorCode::kFailedPrecondition,
              "the name '" + core_->name + "' was not handed off: " +
                  (successor->empty() ? std::string("no candidate")
                                      : "the candidate '" + *successor + "'") +
                  " was waiting for it (registered for hand-offs within the last 3 s), or this "
                  "term's lease had run out; it was given back to all instead"));
        }
      } else {
        lease->release();
      }
    } catch (const Error& e) {
      core_->report(e);  // the lease then ends at its TTL (or, handed off, is the candidate's)
    }
    if (handed) why = TermEnd::kHandedOff;
    // Not a candidate while the term lasted; it registers again before it next waits.
    if (candidacy) candidacy->withdraw();
    if (observers) {
      event.lasted = std::chrono::steady_clock::now() - elected_at;
      event.why = why;
      if (handed) {
        event.handed_to = handed->candidate;
        if (event.handed_to.starts_with(kNamed)) event.handed_to.remove_prefix(kNamed.size());
      }
      observers.each([&](Observer& each) { each.term_ended(event); });
    }
    if (o.on_revoked) {
      try {
        o.on_revoked(number, why);
      } catch (const std::exception& e) {
        core_->report(e);
      }
    }
    pause(o.rejoin_after, stop);
  }
}

std::optional<Leader> leader_of(Connection& conn, std::string_view name, const TableNames& tables) {
  validate_lock_key(name);
  // The name's row alone, by its key (not a scan of every key the name begins).
  const std::optional<LockRow> row = find_lock(conn, tables, name);
  if (!row || row->expired || row->hold_count == 0) return std::nullopt;
  return Leader{Owner{row->owner_host, row->owner_process, row->owner_thread},
                value_of(row->metadata), row->fencing_token, row->acquired_at, row->expires_at};
}

std::optional<Leader> Election::leader() {
  auto conn = core_->source.acquire();
  return leader_of(*conn, core_->name, core_->options.tables);
}

void Election::observe(const std::function<void(const std::optional<Leader>&)>& on_change,
                       std::stop_token stop, std::chrono::milliseconds every) {
  bool first = true;
  std::optional<std::int64_t> seen;  // the term last reported; nullopt: none
  while (!stop.stop_requested()) {
    try {
      std::optional<Leader> now = leader();
      std::optional<std::int64_t> term;
      if (now) term = now->term;
      if (first || term != seen) {
        first = false;
        seen = term;
        on_change(now);
      }
    } catch (const Error& e) {
      core_->report(e);
    }
    pause(every, stop);
  }
}

}  // namespace dblock
