// SPDX-License-Identifier: Apache-2.0
#include "run_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common.hpp"
#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "duration.hpp"
#include "job.hpp"
#include "lease_keeper.hpp"
#include "run_metrics.hpp"
#include "signal_inbox.hpp"
#include "supervise.hpp"

namespace dblock::cli {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kRunFooter =
    R"(Runs CMD while holding the lock KEY, so that it runs in one place at a time, and renews the
lease while CMD runs. Put CMD after `--`; it is found on PATH.

CMD runs in a process group of its own (and, where dblock runs as root on a cgroup v2 system,
a cgroup of its own), with dblock as the subreaper of its orphans: "CMD's processes" below are
all of them, also the children of a wrapper script and daemons that left the group. Every
signal dblock sends or passes on goes to all of them.

CMD learns its lease from the environment: DBLOCK_KEY, DBLOCK_FENCING_TOKEN (pass it to the
writes the lock protects), DBLOCK_LEASE_ID and DBLOCK_OWNER (host/process/thread).

If the lease cannot be renewed (say R is when the last renewal that succeeded was sent; the
database expires the lease no sooner than R + --ttl):
  R + ttl - stop-margin               CMD's processes get SIGTERM
  R + ttl - stop-margin + kill-after  those still running get SIGKILL
so they are gone --stop-margin minus --kill-after before anyone else can take the lock. A lease
found gone (an operator's `dblock release --force`) gets SIGTERM at once, SIGKILL --kill-after
later. Renewals go out every third of (ttl - stop-margin). --kill-after < --stop-margin < --ttl.

When CMD exits but leaves processes running, they get SIGTERM, then SIGKILL after --kill-after,
and the lock is released only once they are gone: nothing runs unprotected.

A job several hosts run from cron: start times differ between hosts (clocks, cron's own delay),
so a job shorter than that difference would run once per host. --min-hold keeps the lock taken
until that long after it was acquired, by the database clock, however soon CMD ends: set it
below the schedule's period and above the hosts' spread (e.g. 1m for a job every 5 minutes).
`dblock locks` shows such a lock as "finished" until then. A dblock that dies frees the lock at
--ttl as always.

--lock-delay D keeps the lock taken for D more after its lease ran out unrenewed (dblock killed,
paused or cut off from the database), by the database clock: writes CMD still had on their way
to something that cannot check DBLOCK_FENCING_TOKEN land before another host's run starts. A
release (CMD ended, its processes gone) frees the lock at once. The price: after a crash, the
lock is taken for --ttl + D. `dblock locks` shows the expiry with D included.

Exit status:
  CMD's own: its exit code, or 128+N when signal N killed it.
  75   the lock is held elsewhere (still, after --wait): CMD was not run; one line on stderr,
       or nothing with -q/--quiet-busy, so that cron, which mails any output, stays quiet.
  75   the lease was lost while CMD ran: CMD's processes were stopped as above.
  126  CMD is not executable; 127: CMD was not found (the lock is released; CMD never ran).
  64 bad option, 69 database unreachable, 77 access denied, 78 tables missing.

SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to dblock (a terminal's Ctrl-C and Ctrl-\ too) are
passed on to CMD's processes. While dblock is still waiting for the lock, these signals stop it
(exit 128+N) without running CMD. If dblock itself is killed (kill -9), CMD's processes get
SIGTERM, and SIGKILL --kill-after later, from a guard process dblock starts beside CMD.
CMD starts with every signal at its default action and none blocked. It is not in the
terminal's foreground group: an interactive CMD cannot read the terminal.

Durations: a number with a unit, ms, s, m (or min), h or d, decimals and several parts allowed
(500ms, 1.5s, 30s, 2min, 1m30s, 1h, 1d), or 0.)";

struct RunOptions {
  DatabaseOptions db;
  std::string key;
  std::string ttl = "30s";
  std::string wait = "0";
  std::optional<std::string> owner;
  std::string min_hold = "0";
  std::string lock_delay = "0";
  bool quiet_busy = false;
  std::optional<std::string> prometheus;
  CommandOptions cmd;
};

// Waits up to `wait` for the lock. With a wait, the acquire runs on a second thread so that a
// signal can end the wait at once: dblock then records the run as not run and exits 128+N at
// once, without unwinding (that thread still uses the pool); a lease it may just have taken
// expires by its TTL.
std::optional<Lease> acquire(UniqueKeyLock& lock, const RunOptions& opts, milliseconds wait,
                             const LockOptions& options, SignalInbox& inbox, Wakeup& wakeup,
                             RunMetrics& metrics) {
  if (wait == milliseconds(0)) return lock.try_acquire(opts.key, options);
  std::promise<std::optional<Lease>> promise;
  std::future<std::optional<Lease>> result = promise.get_future();
  std::thread worker([&] {
    try {
      promise.set_value(lock.acquire(opts.key, wait, options));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
    wakeup.notify();
  });
  for (;;) {
    wait_readable(inbox.fd(), wakeup.fd());
    if (auto sig = inbox.next_stop_signal()) {
      std::cerr << "dblock: stopped by " << signal_name(*sig) << " while waiting for lock "
                << opts.key << "; not running " << opts.cmd.command[0] << '\n';
      ::_exit(metrics.record(RunEnd::kNotRun, 128 + *sig));
    }
    wakeup.drain();
    if (result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      worker.join();
      return result.get();
    }
  }
}

// Releases the lease. Returns false when it turned out lost (someone else may have held the key
// meanwhile). A fault is reported and otherwise ignored: the lease then expires by its TTL.
bool release(Lease& lease, const RunOptions& opts, milliseconds ttl) {
  try {
    return lease.release() != ReleaseOutcome::kNotHeld;
  } catch (const Error& e) {
    std::cerr << "dblock: could not release the lock " << opts.key << " (" << e.what()
              << "); it expires within " << format_duration(ttl) << '\n';
    return true;
  }
}

int run(const RunOptions& opts, RunMetrics& metrics) {
  const Timeline t = timeline_of(opts.ttl, opts.cmd);
  const auto wait = parse_duration_option(opts.wait, "--wait");
  const auto min_hold = parse_duration_option(opts.min_hold, "--min-hold");
  const auto lock_delay = parse_duration_option(opts.lock_delay, "--lock-delay");
  if (lock_delay > std::chrono::hours(1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--lock-delay must be from 0 to 1h; got " + format_duration(lock_delay));
  }
  const std::string& cmd = opts.cmd.command.front();

  SignalInbox inbox;  // before any thread starts, so every thread inherits the mask
  Wakeup wakeup;
  LockOptions options;
  options.ttl = t.ttl;
  options.min_hold = min_hold;
  options.lock_delay = lock_delay;
  if (opts.owner) options.owner = Owner::named(*opts.owner);
  options.metadata = nlohmann::json::object({{"command", cmd}})
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  options.auto_renew = false;  // renewed by the LeaseKeeper, which knows when it last succeeded

  std::unique_ptr<Pool> pool = open_pool(opts.db.resolve_url(), {.max_size = 2});
  UniqueKeyLockOptions lock_options;
  lock_options.tables = opts.db.table_names();
  UniqueKeyLock lock(*pool, lock_options);
  Clock::time_point sent = Clock::now();
  std::optional<Lease> lease = acquire(lock, opts, wait, options, inbox, wakeup, metrics);
  if (!lease) {
    if (opts.quiet_busy) return metrics.record(RunEnd::kBusy, kExitTempFail);
    std::cerr << "dblock: lock " << opts.key << " is held by someone else"
              << (wait.count() > 0 ? " (waited " + format_duration(wait) + ")" : "")
              << "; not running " << cmd << '\n';
    return metrics.record(RunEnd::kBusy, kExitTempFail);
  }
  if (wait.count() > 0) {  // when the winning attempt was sent is unknown: renew, and count
    sent = Clock::now();   // from that
    if (!lease->renew()) {
      std::cerr << "dblock: lost the lock " << opts.key << " before " << cmd
                << " started; not running it\n";
      return metrics.record(RunEnd::kLost, kExitTempFail);
    }
  }
  if (auto sig = inbox.next_stop_signal()) {  // arrived while trying: do not start CMD
    release(*lease, opts, t.ttl + lock_delay);
    std::cerr << "dblock: stopped by " << signal_name(*sig) << " before " << cmd
              << " started; not running it\n";
    return metrics.record(RunEnd::kNotRun, 128 + *sig);
  }

  std::optional<Job> job;
  metrics.started();
  job.emplace(opts.cmd.command, environment_for(*lease), !opts.cmd.no_cgroup, t.kill_after);
  if (job->exec_errno() != 0) {
    release(*lease, opts, t.ttl + lock_delay);
    std::cerr << "dblock: cannot run " << cmd << ": " << std::strerror(job->exec_errno()) << '\n';
    return metrics.record(RunEnd::kNotRun,
                          job->exec_errno() == ENOENT ? kExitNotFound : kExitCannotExecute);
  }
  LeaseKeeper keeper(*lease, sent, t.renew_every, [&wakeup] { wakeup.notify(); });
  const LeaseWatch watch{"the lock " + opts.key, "exiting 75",
                         [&] { return keeper.last_renewal_sent() + t.ttl - t.stop_margin; },
                         [&]() -> std::optional<std::string> {
                           if (keeper.gone()) return "its lease is gone";
                           return std::nullopt;
                         }};
  const Ended ended = supervise(*job, t, watch, cmd, inbox, wakeup);
  job.reset();       // removes its cgroup
  if (ended.lost) {  // the lease is gone or about to be: nothing to free
    keeper.join_if_finished();
    exit_now(metrics.record(RunEnd::kLost, kExitTempFail));
  }
  std::optional<ReleaseOutcome> released;
  try {
    released = keeper.stop_and_release(keeper.last_renewal_sent() + t.ttl - t.stop_margin);
  } catch (const Error& e) {
    std::cerr << "dblock: could not release the lock " << opts.key << " (" << e.what()
              << "); it expires within " << format_duration(t.ttl + lock_delay) << '\n';
    exit_now(metrics.record(RunEnd::kRan, exit_code_of(ended.status)));
  }
  if (!released) {
    std::cerr << "dblock: could not release the lock " << opts.key
              << " (the database is not answering); it expires within "
              << format_duration(t.ttl + lock_delay) << '\n';
    exit_now(metrics.record(RunEnd::kRan, exit_code_of(ended.status)));
  }
  if (*released == ReleaseOutcome::kNotHeld) {
    std::cerr << "dblock: lost the lock " << opts.key << " before " << cmd
              << " finished (another holder may have run at the same time); exiting 75\n";
    return metrics.record(RunEnd::kLost, kExitTempFail);
  }
  return metrics.record(RunEnd::kRan, exit_code_of(ended.status));
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a command while holding a lock, e.g. a cron job that must not overlap");
  sub->add_option("--key", opts->key, "The lock to hold while CMD runs (1 to 255 characters)")
      ->type_name("KEY")
      ->required();
  sub->add_option("--ttl", opts->ttl,
                  "Lease length; bounds how long the lock outlives a dblock that was killed")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--wait", opts->wait, "How long to wait for a lock held elsewhere; 0: try once")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--owner", opts->owner,
                  "A name for this holder, shown by `dblock locks` (default: the thread id)")
      ->type_name("NAME");
  sub->add_option("--min-hold", opts->min_hold,
                  "Keep the lock taken at least this long after it was acquired, however soon CMD "
                  "ends, so a short cron job fired a little later on another host does not run "
                  "again; 0: release when CMD ends")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--lock-delay", opts->lock_delay,
                  "Keep the lock taken this much longer after its lease ran out unrenewed (dblock "
                  "killed or cut off), so CMD's writes still on their way land before another "
                  "run starts; a release frees it at once; 0 to 1h")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_flag("-q,--quiet-busy", opts->quiet_busy,
                "When the lock is held elsewhere, exit 75 without a word (cron mails any output)");
  sub->add_option("--prometheus", opts->prometheus,
                  "Write how this run ended to FILE for node_exporter's textfile collector "
                  "(counters carry over from the file: one file per job)")
      ->type_name("FILE");
  opts->cmd.add_to(*sub);
  opts->db.add_to(*sub);
  sub->footer(kRunFooter);
  sub->callback([opts, exit_code] {
    RunMetrics metrics(opts->prometheus, opts->key);
    *exit_code = run_guarded([&] { return run(*opts, metrics); });
    // What ended the run before it could say (a bad option, the database unreachable, ...).
    if (!metrics.recorded()) metrics.record(RunEnd::kFailed, *exit_code);
  });
}

}  // namespace dblock::cli
