// SPDX-License-Identifier: Apache-2.0
/// @file
/// Leader election: of the candidates campaigning for one name, at most one leads at a time, for
/// a term numbered by the fencing token of the unique-key lease behind it (strictly increasing per
/// name). The leader's work runs with a stop token that is requested before another term could
/// begin (the lease's, Lease::stop_token); when the work returns, throws or is stopped, the term
/// ends and the candidate campaigns again. A candidate never gives up on its own: database
/// errors are reported to on_error and retried with backoff for as long as campaign() runs.
/// The leader publishes a value (its address, say) that leader() returns to anyone.
///
/// @code
///   dblock::Election election(*pool, "scheduler", {.value = "10.0.0.7:8080"});
///   election.campaign(
///       [&](const dblock::Term& term) {            // elected: lead until term.stop_token()
///         while (!term.stop_token().stop_requested()) schedule_next(term.number());
///       },
///       shutdown.get_token());                     // campaigns until the service stops
///
///   if (auto leader = election.leader()) connect_to(leader->value);  // anyone, without
///   campaigning
/// @endcode
///
/// Thread-safety: campaign() runs on the calling thread until its stop token is requested; one
/// campaign() per Election object at a time. leader(), observe() and hand_off() may be called
/// from any thread at any time. The ConnectionSource must outlive the Election.
///
/// Explained in docs/locks/election.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "dblock/backoff.hpp"
#include "dblock/connection.hpp"
#include "dblock/connection_source.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/observer.hpp"
#include "dblock/owner.hpp"
#include "dblock/table_names.hpp"

namespace dblock {

namespace detail {
class ElectionCore;  // the lock, the candidate's identity and its options (lib/src)
}  // namespace detail

/// Who leads, as the database sees it now.
struct Leader {
  Owner owner;             ///< the leading candidate (its host, process and candidate name)
  std::string value;       ///< what it publishes (ElectionOptions::value)
  std::int64_t term = 0;   ///< its term: the fencing token of its lease
  std::string elected_at;  ///< UTC, ISO 8601 with microseconds
  std::string expires_at;  ///< when its lease runs out unless renewed (UTC, ISO 8601)
};

struct ElectionOptions {
  /// Published by the leader while it leads; leader() returns it. Up to 4096 bytes of UTF-8.
  std::string value{};
  /// This candidate's name in the lock row's owner column (Owner::named). Empty (default): a
  /// random one. Two Election objects of one process must not campaign under one name for the
  /// same election (they would share one reentrant hold): campaign() refuses it.
  std::string candidate{};
  /// The term's lease: how long a crashed leader keeps the name (takeover after a crash takes up
  /// to this long), and how long before that its work is stopped (LockOptions::stop_margin;
  /// default a third). 100 ms to 365 days.
  std::chrono::milliseconds ttl = std::chrono::seconds(10);
  std::optional<std::chrono::milliseconds> stop_margin{};
  /// Renewal gated on progress (LockOptions::renew_if): a leader whose work is stuck loses the
  /// name at its TTL.
  std::function<bool()> renew_if{};
  /// How long a candidate whose term ended (its work returned or threw, or its lease was lost)
  /// waits before campaigning again, so another candidate takes over instead of the same one
  /// again at once. 0 to 1 hour.
  std::chrono::milliseconds rejoin_after = std::chrono::seconds(1);
  /// The pauses between tries after a database error.
  BackoffPolicy retry{std::chrono::milliseconds(100), std::chrono::seconds(5),
                      std::chrono::milliseconds(10)};
  /// Called on the campaigning thread with what went wrong: a database error while campaigning
  /// (retried after a pause), or what the leader's work threw (the term ends). Must not throw.
  std::function<void(const std::exception& error)> on_error{};
  /// Called on the campaigning thread when a term of this candidate's ends, with its number and
  /// why; before the candidate campaigns again.
  std::function<void(std::int64_t term, TermEnd why)> on_revoked{};
  /// Events of this candidate's campaign (dblock/observer.hpp), in addition to the process-wide
  /// observer: its acquisitions of the name's unique-key lease (strategy "unique_key", the
  /// election's name as the key; while another candidate leads, one that ends timed_out about
  /// every second), and each term's lease: its renewals, its loss, its release when the term
  /// ends. nullptr (default): none of its own. See docs/locks/election.md.
  std::shared_ptr<Observer> observer{};
  /// The lock table (and its prefix) the election's row lives in.
  TableNames tables{};
  /// On PostgreSQL, candidates are woken by a notification when a leader resigns, and take over
  /// within milliseconds. Where there is none (MySQL, MariaDB, or false here) they poll the row
  /// every `poll` at most.
  bool notify = true;
  std::chrono::milliseconds poll = std::chrono::milliseconds(25);
  /// While it waits, the candidate registers itself (and the lease it would hold, with its value)
  /// in the name's queue of waiters, refreshed with each try (about one statement a second), so
  /// that a leader of any process can hand it the name (Election::hand_off). false: it takes the
  /// name only when it comes free. Needs migration 0010; before it, the candidate campaigns
  /// without registering and reports that once to on_error.
  bool hand_offs = true;
};

/// A term of this candidate's, handed to the leader's work.
class DBLOCK_EXPORT Term {
 public:
  /// The term number: the lease's fencing token. Pass it to the writes only the leader may make.
  std::int64_t number() const;
  /// Requested when the term must end: the lease is lost or about to run out, resign() was
  /// called, or campaign() was told to stop. Each call also looks at the lease's clock, so work
  /// that asks for it before each step sees the stop at once when its process wakes from a
  /// pause (SIGSTOP, a VM paused) past the stop deadline, before the renewer's thread has run;
  /// a token kept from earlier sees it once that thread has.
  std::stop_token stop_token() const noexcept;
  /// The lease behind the term (for fence() and its connection-less checks).
  const Lease& lease() const noexcept;
  /// Ends the term early: the stop token is requested; the lease is given back once the work
  /// returns.
  void resign() const noexcept;
  /// Ends the term early, as resign(), and once the work returns hands the name to `candidate`
  /// (its ElectionOptions::candidate name; empty: the candidate waiting longest), in one
  /// statement: it leads the next term, with no moment between in which the name is free and
  /// no moment in which two candidates' work runs. Where no such candidate waits (registered
  /// within the last 3 s; ElectionOptions::hand_offs), the name is given back as after resign()
  /// and on_error is told. See Election::hand_off.
  void hand_off(std::string candidate = {}) const;

  explicit Term(Lease& lease, std::stop_token campaign_stop);
  ~Term();
  Term(const Term&) = delete;
  Term& operator=(const Term&) = delete;

 private:
  friend class Election;
  struct State;
  std::unique_ptr<State> state_;
};

/// The leader of the election `name` now, read through `conn` (one statement), or nothing when
/// no one leads: for tools and services that only look (`dblock leader`).
DBLOCK_EXPORT std::optional<Leader> leader_of(Connection& conn, std::string_view name,
                                              const TableNames& tables = TableNames());

/// A candidate in the election of one name (a key of the unique-key lock table).
class DBLOCK_EXPORT Election {
 public:
  /// Throws Error(kInvalidArgument) for a bad name (as a lock key), value or options.
  Election(ConnectionSource& source, std::string name, ElectionOptions options = {});
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  /// Campaigns until `stop` is requested: waits to be elected, runs `lead` on this thread for
  /// each term, gives the name back when `lead` returns or throws (a throw is reported to
  /// on_error, never rethrown), and campaigns again after rejoin_after. Returns once `stop` is
  /// requested, with any term of its own ended and its lease given back. Database errors never
  /// end it: they are reported to on_error and retried with backoff. Throws Error(kInvalidArgument)
  /// when another Election of this process campaigns under the same candidate name.
  void campaign(const std::function<void(const Term&)>& lead, std::stop_token stop);

  /// A planned hand-over, for deploys: if this candidate leads now, ends its term as
  /// Term::hand_off(candidate) does and returns true (the hand-off happens once its work has
  /// returned; on_revoked and the observers' term_ended say kHandedOff and to whom); false when it
  /// does not lead. Any thread.
  ///
  /// @code
  ///   // on the old replica, once the new one ("web-2") campaigns:
  ///   election.hand_off("web-2");  // web-2 leads the next term as soon as this work stops
  /// @endcode
  bool hand_off(std::string candidate = {});

  /// The leader now (one read of the election's row), or nothing when no one leads.
  std::optional<Leader> leader();

  /// Calls `on_change` with the leader each time it changes (a new term, or no leader), starting
  /// with the current one, until `stop`; reads the row every `every`. On this thread. Database
  /// errors are reported to on_error and retried.
  void observe(const std::function<void(const std::optional<Leader>&)>& on_change,
               std::stop_token stop,
               std::chrono::milliseconds every = std::chrono::milliseconds(500));

  /// The election's name and this candidate's identity.
  const std::string& name() const noexcept;
  const Owner& candidate() const noexcept;

 private:
  std::unique_ptr<detail::ElectionCore> core_;
};

}  // namespace dblock
