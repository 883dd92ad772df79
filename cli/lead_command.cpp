// SPDX-License-Identifier: Apache-2.0
#include "lead_command.hpp"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "dblock/election.hpp"
#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "duration.hpp"
#include "job.hpp"
#include "signal_inbox.hpp"
#include "supervise.hpp"

namespace dblock::cli {

namespace {

using std::chrono::milliseconds;

constexpr const char* kLeadFooter =
    R"(Campaigns in the election KEY (the same as dblock::Election in a program) and runs CMD for
as long as this candidate leads; when it stops leading, CMD's processes are stopped and dblock
campaigns again, and runs CMD again when it is elected again. Exactly one of the candidates
campaigning for KEY (on any number of hosts) runs CMD at a time. Put CMD after `--`; it is
found on PATH. `dblock leader --key KEY` shows who leads.

CMD's processes, how they are found and signalled, and the stop timeline are those of
`dblock run` (see `dblock run --help`): when the term's lease could not be renewed (say R is
when the last renewal that succeeded was sent), CMD's processes get SIGTERM at
R + ttl - stop-margin and SIGKILL --kill-after later, so they are gone before any other
candidate can be elected. A lease found gone (`dblock release --force`, a killed session) stops
them at once. CMD learns its term from the environment: DBLOCK_FENCING_TOKEN is the term number
(strictly increasing per KEY; pass it to the writes only the leader may make), DBLOCK_KEY,
DBLOCK_LEASE_ID and DBLOCK_OWNER.

When CMD exits by itself (whatever its status), the term ends: dblock gives the leadership
back, and campaigns again after --rejoin-after, so another candidate takes over first if there
is one. Errors of the database while campaigning are printed and retried with backoff; dblock
never ends on its own.

A candidate that crashes (kill -9, power loss) keeps the leadership until its lease runs out:
takeover then takes up to --ttl. A candidate stopped by a signal gives it back at once: the
next one leads within milliseconds on PostgreSQL (it is woken by a notification) and within
25 ms on MySQL and MariaDB (they poll).

For deploys, --hand-off-to NAME (or --hand-off) hands the leadership, when dblock is stopped by
a signal while it leads, to the candidate campaigning as --candidate NAME (or the one
campaigning longest) once CMD's processes are gone: in one statement, so no other candidate can
take it in between and NAME's CMD starts as soon as it is told. Where no such candidate is
campaigning, the leadership is given back to all, as without the option, and dblock says so.

SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to dblock are passed on to CMD's processes; once they
are gone, dblock gives the leadership back and exits with CMD's status. While it is not
leading, these signals end it within a second (exit 128+N). If dblock itself is killed (kill -9),
CMD's processes get SIGTERM, and SIGKILL --kill-after later, as `dblock run`'s do. A dblock paused with SIGSTOP cannot stop CMD: pass the fencing token to
CMD's writes so that a paused term's writes are refused once another term began.

Exit status: CMD's own once stopped by a signal (its exit code, or 128+N), 128+N when
stopped while not leading, 126 and 127 when CMD cannot be executed or found, 64 bad option,
69 database unreachable, 77 access denied, 78 tables missing (checked once at the start).

Durations: as `dblock run` takes them (500ms, 1.5s, 30s, 2min, 1m30s, 1h, 1d).)";

struct LeadOptions {
  DatabaseOptions db;
  std::string key;
  std::string value;
  std::string candidate;
  std::string ttl = "10s";
  std::string rejoin_after = "1s";
  std::string hand_off_to;  // --hand-off-to NAME
  bool hand_off = false;    // --hand-off: to the candidate campaigning longest
  CommandOptions cmd;
};

// Hands each term from the campaigning thread to the main thread, which runs CMD for it, and
// keeps the campaigning thread (and so the lease) in the term until the main thread is done.
class TermHandoff {
 public:
  explicit TermHandoff(Wakeup& wakeup) : wakeup_(wakeup) {}

  // Campaigning thread: offers `term`; returns once the main thread has finished it, or at once
  // when no more terms are taken.
  void lead(const Term& term) {
    std::unique_lock lock(mu_);
    if (closed_) return;
    term_ = &term;
    done_ = false;
    wakeup_.notify();
    cv_.wait(lock, [this] { return done_ || closed_; });
    term_ = nullptr;
  }
  // Main thread: the term offered and not yet finished, if any.
  const Term* offered() {
    std::lock_guard lock(mu_);
    return done_ || closed_ ? nullptr : term_;
  }
  // Main thread: CMD's processes for the offered term are gone.
  void finish() {
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  // Main thread: no term is taken from now on.
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  Wakeup& wakeup_;
  std::mutex mu_;
  std::condition_variable cv_;
  const Term* term_ = nullptr;  // under mu_
  bool done_ = false;           // under mu_
  bool closed_ = false;         // under mu_
};

// Runs CMD for one term until its processes are gone. Returns the exit status dblock ends with,
// or nothing to campaign again.
// `stopping` is called when a signal stopped CMD, before the term ends.
std::optional<int> run_term(const Term& term, const LeadOptions& opts, const Timeline& t,
                            milliseconds rejoin_after, SignalInbox& inbox, Wakeup& wakeup,
                            const std::function<void()>& stopping) {
  const std::string& cmd = opts.cmd.command.front();
  const Lease& lease = term.lease();
  const std::string what =
      "the leadership of " + opts.key + " (term " + std::to_string(term.number()) + ")";
  Job job(opts.cmd.command, environment_for(lease), !opts.cmd.no_cgroup, t.kill_after);
  if (job.exec_errno() != 0) {
    std::cerr << "dblock: cannot run " << cmd << ": " << std::strerror(job.exec_errno())
              << "; giving up " << what << '\n';
    return job.exec_errno() == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  std::cerr << "dblock: leading " << opts.key << " (term " << term.number() << "); started " << cmd
            << '\n';
  const std::stop_token lease_stop = lease.stop_token();
  const std::stop_callback wake(lease_stop, [&wakeup] { wakeup.notify(); });
  const LeaseWatch watch{
      what, "campaigning again", [] { return SupervisorClock::time_point::max(); },
      [&]() -> std::optional<std::string> {
        if (!lease_stop.stop_requested()) return std::nullopt;
        if (lease.lost()) return "its lease is gone";
        return "its lease was not renewed for " + format_duration(t.ttl - t.stop_margin);
      }};
  const Ended ended = supervise(job, t, watch, cmd, inbox, wakeup);
  if (ended.stop_signal) {
    stopping();
    return exit_code_of(ended.status);
  }
  if (!ended.lost) {
    std::cerr << "dblock: " << cmd << " exited with status " << exit_code_of(ended.status)
              << "; giving up " << what << " and campaigning again in "
              << format_duration(rejoin_after) << '\n';
  }
  return std::nullopt;
}

int lead(const LeadOptions& opts) {
  const Timeline t = timeline_of(opts.ttl, opts.cmd, milliseconds(100));
  const milliseconds rejoin_after = parse_duration_option(opts.rejoin_after, "--rejoin-after");
  if (rejoin_after > std::chrono::hours(1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--rejoin-after must be from 0 to 1h; got " + format_duration(rejoin_after));
  }

  SignalInbox inbox;  // before any thread starts, so every thread inherits the mask
  Wakeup wakeup;
  std::unique_ptr<Pool> pool = open_pool(opts.db.resolve_url());
  {  // A wrong URL, password, privilege or prefix ends dblock now, with its exit code; later
     // errors are the database's, and are retried.
    auto conn = pool->acquire();
    leader_of(*conn, opts.key, opts.db.table_names());
  }
  ElectionOptions options;
  options.value = opts.value;
  options.candidate = opts.candidate;
  options.ttl = t.ttl;
  options.stop_margin = t.stop_margin;
  options.rejoin_after = rejoin_after;
  options.tables = opts.db.table_names();
  options.on_error = [&opts](const std::exception& e) {
    std::cerr << "dblock: campaigning for " << opts.key << ": " << e.what() << "; trying again\n";
  };
  options.on_revoked = [&opts](std::int64_t term, TermEnd why) {
    if (why == TermEnd::kHandedOff) {
      std::cerr << "dblock: handed the leadership of " << opts.key << " off (term " << term
                << " ended)\n";
    }
  };
  Election election(*pool, opts.key, options);
  // --hand-off-to, --hand-off: a signal that stops CMD hands the leadership off.
  const auto stopping = [&] {
    if (!opts.hand_off_to.empty()) {
      election.hand_off(opts.hand_off_to);
    } else if (opts.hand_off) {
      election.hand_off();
    }
  };

  TermHandoff handoff(wakeup);
  std::stop_source campaign_stop;
  std::exception_ptr failed;
  std::atomic<bool> campaign_ended{false};
  std::thread campaigner([&] {
    try {
      election.campaign([&](const Term& term) { handoff.lead(term); }, campaign_stop.get_token());
    } catch (...) {
      failed = std::current_exception();
    }
    campaign_ended = true;
    wakeup.notify();
  });
  // Ends the campaign: any lease of its own is given back when this returns. Also on the way out
  // of an exception, so the campaigning thread never outlives what it uses.
  struct EndCampaign {
    TermHandoff& handoff;
    std::stop_source& stop;
    std::thread& thread;
    void operator()() {
      handoff.close();
      stop.request_stop();
      if (thread.joinable()) thread.join();
    }
    ~EndCampaign() { (*this)(); }
  } end_campaign{handoff, campaign_stop, campaigner};
  auto stop_campaign = [&] {
    end_campaign();
    if (failed) std::rethrow_exception(failed);
  };
  for (;;) {
    if (auto sig = inbox.next_stop_signal()) {
      stop_campaign();
      std::cerr << "dblock: stopped by " << signal_name(*sig) << " while campaigning for "
                << opts.key << "\n";
      return 128 + *sig;
    }
    if (campaign_ended) {
      stop_campaign();  // rethrows what ended it
      return kExitFailure;
    }
    if (const Term* term = handoff.offered()) {
      const std::optional<int> code =
          run_term(*term, opts, t, rejoin_after, inbox, wakeup, stopping);
      handoff.finish();
      if (code) {
        stop_campaign();
        return *code;
      }
      continue;
    }
    wait_readable(inbox.fd(), wakeup.fd());
    wakeup.drain();
  }
}

}  // namespace

void add_lead_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LeadOptions>();
  CLI::App* sub = app.add_subcommand(
      "lead", "Run a command while this host leads an election, e.g. one replica of a service");
  sub->add_option("--key", opts->key, "The election's name (its key in the locks table)")
      ->type_name("NAME")
      ->required();
  sub->add_option("--value", opts->value,
                  "What this candidate publishes while it leads (its address, say); "
                  "`dblock leader` shows it (up to 4096 bytes)")
      ->type_name("TEXT");
  sub->add_option("--candidate", opts->candidate,
                  "This candidate's name, shown by `dblock leader` (default: a random one)")
      ->type_name("NAME");
  sub->add_option("--ttl", opts->ttl,
                  "The term's lease: how long a crashed leader keeps the leadership "
                  "(100ms to 365 days)")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--rejoin-after", opts->rejoin_after,
                  "How long to wait after a term ended before campaigning again, so another "
                  "candidate takes over first (0 to 1h)")
      ->type_name("DURATION")
      ->capture_default_str();
  CLI::Option* to = sub->add_option("--hand-off-to", opts->hand_off_to,
                                    "When a signal stops dblock while it leads, hand the "
                                    "leadership to the candidate campaigning as --candidate NAME "
                                    "(for deploys)")
                        ->type_name("NAME");
  sub->add_flag("--hand-off", opts->hand_off,
                "When a signal stops dblock while it leads, hand the leadership to the candidate "
                "campaigning longest")
      ->excludes(to);
  opts->cmd.add_to(*sub);
  opts->db.add_to(*sub);
  sub->footer(kLeadFooter);
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return lead(*opts); }); });
}

}  // namespace dblock::cli
