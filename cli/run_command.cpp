// SPDX-License-Identifier: Apache-2.0
#include "run_command.hpp"

#include <poll.h>
#include <sys/wait.h>
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
#include "signal_inbox.hpp"

extern char** environ;

namespace dblock::cli {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kExitCannotExecute = 126;  // as a shell reports a command it cannot execute
constexpr int kExitNotFound = 127;       // as a shell reports a command it cannot find

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
(exit 128+N) without running CMD. If dblock itself is killed (kill -9), CMD receives SIGTERM.
CMD starts with every signal at its default action and none blocked. It is not in the
terminal's foreground group: an interactive CMD cannot read the terminal.

Durations: a number with a unit, ms, s, m (or min), h or d, decimals and several parts allowed
(500ms, 1.5s, 30s, 2min, 1m30s, 1h, 1d), or 0.)";

struct RunOptions {
  DatabaseOptions db;
  std::string key;
  std::string ttl = "30s";
  std::string wait = "0";
  std::optional<std::string> stop_margin;
  std::optional<std::string> kill_after;
  std::optional<std::string> owner;
  std::string min_hold = "0";
  std::string lock_delay = "0";
  bool quiet_busy = false;
  bool no_cgroup = false;
  std::vector<std::string> command;
};

milliseconds parse_duration_option(const std::string& text, const char* option) {
  try {
    return parse_duration(text);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
}

// The durations the stop timeline is made of (see the footer).
struct Timeline {
  milliseconds ttl;
  milliseconds stop_margin;
  milliseconds kill_after;
  milliseconds renew_every;
};

Timeline timeline_of(const RunOptions& opts) {
  Timeline t;
  t.ttl = parse_duration_option(opts.ttl, "--ttl");
  if (t.ttl < milliseconds(1) || t.ttl > std::chrono::hours(24 * 365)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--ttl must be from 1 ms to 365 days; got " + format_duration(t.ttl));
  }
  t.stop_margin =
      opts.stop_margin ? parse_duration_option(*opts.stop_margin, "--stop-margin") : t.ttl / 3;
  t.kill_after =
      opts.kill_after ? parse_duration_option(*opts.kill_after, "--kill-after") : t.stop_margin / 2;
  if (!(t.kill_after < t.stop_margin && t.stop_margin < t.ttl)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--kill-after (" + format_duration(t.kill_after) + ") must be shorter than " +
                    "--stop-margin (" + format_duration(t.stop_margin) +
                    "), and that shorter than --ttl (" + format_duration(t.ttl) +
                    "), so that CMD is killed before its lease can expire: raise --ttl or " +
                    "lower --stop-margin or --kill-after");
  }
  t.renew_every = std::max(milliseconds(1), (t.ttl - t.stop_margin) / 3);
  return t;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "a signal";
  }
}

// Sleeps until one of the two descriptors is readable or `timeout` passes (-1: no limit).
void wait_readable(int a, int b, int timeout_ms = -1) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  while (::poll(fds, 2, timeout_ms) < 0) {
    if (errno != EINTR) throw_system_error("poll");
  }
}

// Waits up to `wait` for the lock. With a wait, the acquire runs on a second thread so that a
// signal can end the wait at once: dblock then exits 128+N at once, without unwinding (that
// thread still uses the pool); a lease it may just have taken expires by its TTL.
std::optional<Lease> acquire(UniqueKeyLock& lock, const RunOptions& opts, milliseconds wait,
                             const LockOptions& options, SignalInbox& inbox, Wakeup& wakeup) {
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
                << opts.key << "; not running " << opts.command[0] << '\n';
      ::_exit(128 + *sig);
    }
    wakeup.drain();
    if (result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      worker.join();
      return result.get();
    }
  }
}

// dblock's environment with the lease's facts added (replacing any of the same name).
std::vector<std::string> environment_for(const Lease& lease) {
  const std::pair<const char*, std::string> lease_vars[] = {
      {"DBLOCK_KEY", lease.key()},
      {"DBLOCK_FENCING_TOKEN", std::to_string(lease.fencing_token())},
      {"DBLOCK_LEASE_ID", lease.lease_id()},
      {"DBLOCK_OWNER", lease.owner().to_string()}};
  std::vector<std::string> out;
  for (char** var = environ; *var != nullptr; ++var) {
    std::string_view text(*var);
    const bool replaced = std::any_of(std::begin(lease_vars), std::end(lease_vars), [&](auto& v) {
      return text.substr(0, text.find('=')) == v.first;
    });
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [name, value] : lease_vars) out.push_back(std::string(name) + "=" + value);
  return out;
}

int milliseconds_until(Clock::time_point when, Clock::time_point now) {
  auto ms = std::chrono::ceil<milliseconds>(when - now).count();
  return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 250));
}

struct Ended {
  int status = 0;     // CMD's wait status
  bool lost = false;  // CMD's processes were stopped because the lease was (about to be) lost
};

// Waits until CMD has exited and none of its processes is left, passing signals on, and stops
// them on the timeline of the footer when the lease is lost or when CMD leaves some behind.
Ended supervise(Job& job, LeaseKeeper& keeper, const Timeline& t, const RunOptions& opts,
                SignalInbox& inbox, Wakeup& wakeup) {
  enum class Stopping { kNo, kLeftovers, kLost };
  Stopping stopping = Stopping::kNo;
  Clock::time_point kill_at = Clock::time_point::max();
  for (;;) {
    std::optional<int> status = job.reap();
    const Clock::time_point now = Clock::now();
    const Clock::time_point term_at = keeper.last_renewal_sent() + t.ttl - t.stop_margin;
    if (stopping != Stopping::kLost && (keeper.gone() || now >= term_at)) {
      std::cerr << "dblock: lost the lock " << opts.key << " while " << opts.command[0]
                << " was running ("
                << (keeper.gone() ? "its lease is gone"
                                  : "not renewed for " + format_duration(t.ttl - t.stop_margin))
                << "); sent its processes SIGTERM, SIGKILL follows after "
                << format_duration(t.kill_after) << "; exiting 75\n";
      stopping = Stopping::kLost;
      job.signal_all(SIGTERM);
      kill_at = std::min({kill_at, now + t.kill_after, term_at + t.kill_after});
    }
    if (status && stopping == Stopping::kNo) {
      if (!job.anything_left()) return {*status, false};
      std::cerr << "dblock: " << opts.command[0] << " exited but left processes running; "
                << "stopping them before releasing the lock " << opts.key << '\n';
      stopping = Stopping::kLeftovers;
      job.signal_all(SIGTERM);
      kill_at = std::min(now + t.kill_after, term_at + t.kill_after);
    }
    if (stopping != Stopping::kNo && now >= kill_at) job.signal_all(SIGKILL);
    if (status && stopping != Stopping::kNo && !job.anything_left()) {
      return {*status, stopping == Stopping::kLost};
    }
    // Wake for the next deadline, and at least every 250 ms: a child's exit is also found by
    // polling, whatever happens to SIGCHLD.
    int timeout = milliseconds_until(std::min(term_at, kill_at), now);
    if (now >= kill_at) timeout = 10;  // re-parented orphans keep arriving
    wait_readable(inbox.fd(), wakeup.fd(), timeout);
    wakeup.drain();
    while (auto sig = inbox.next()) {
      if (*sig == SIGCHLD) continue;  // reaped above
      // Also a terminal's Ctrl-C: CMD's processes are not in the terminal's foreground group.
      job.signal_all(*sig);
    }
  }
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Ends the process now: a renewal may still be stuck on a connection that stopped answering,
// and nothing that thread uses may be destroyed under it.
[[noreturn]] void exit_now(int code) {
  std::cout.flush();
  std::fflush(nullptr);
  ::_exit(code);
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

int run(const RunOptions& opts) {
  const Timeline t = timeline_of(opts);
  const auto wait = parse_duration_option(opts.wait, "--wait");
  const auto min_hold = parse_duration_option(opts.min_hold, "--min-hold");
  const auto lock_delay = parse_duration_option(opts.lock_delay, "--lock-delay");
  if (lock_delay > std::chrono::hours(1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--lock-delay must be from 0 to 1h; got " + format_duration(lock_delay));
  }
  const std::string& cmd = opts.command.front();

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
  std::optional<Lease> lease = acquire(lock, opts, wait, options, inbox, wakeup);
  if (!lease) {
    if (opts.quiet_busy) return kExitTempFail;
    std::cerr << "dblock: lock " << opts.key << " is held by someone else"
              << (wait.count() > 0 ? " (waited " + format_duration(wait) + ")" : "")
              << "; not running " << cmd << '\n';
    return kExitTempFail;
  }
  if (wait.count() > 0) {  // when the winning attempt was sent is unknown: renew, and count
    sent = Clock::now();   // from that
    if (!lease->renew()) {
      std::cerr << "dblock: lost the lock " << opts.key << " before " << cmd
                << " started; not running it\n";
      return kExitTempFail;
    }
  }
  if (auto sig = inbox.next_stop_signal()) {  // arrived while trying: do not start CMD
    release(*lease, opts, t.ttl + lock_delay);
    std::cerr << "dblock: stopped by " << signal_name(*sig) << " before " << cmd
              << " started; not running it\n";
    return 128 + *sig;
  }

  std::optional<Job> job;
  job.emplace(opts.command, environment_for(*lease), !opts.no_cgroup);
  if (job->exec_errno() != 0) {
    release(*lease, opts, t.ttl + lock_delay);
    std::cerr << "dblock: cannot run " << cmd << ": " << std::strerror(job->exec_errno()) << '\n';
    return job->exec_errno() == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  LeaseKeeper keeper(*lease, sent, t.renew_every, [&wakeup] { wakeup.notify(); });
  const Ended ended = supervise(*job, keeper, t, opts, inbox, wakeup);
  job.reset();       // removes its cgroup
  if (ended.lost) {  // the lease is gone or about to be: nothing to free
    keeper.join_if_finished();
    exit_now(kExitTempFail);
  }
  std::optional<ReleaseOutcome> released;
  try {
    released = keeper.stop_and_release(keeper.last_renewal_sent() + t.ttl - t.stop_margin);
  } catch (const Error& e) {
    std::cerr << "dblock: could not release the lock " << opts.key << " (" << e.what()
              << "); it expires within " << format_duration(t.ttl + lock_delay) << '\n';
    exit_now(exit_code_of(ended.status));
  }
  if (!released) {
    std::cerr << "dblock: could not release the lock " << opts.key
              << " (the database is not answering); it expires within "
              << format_duration(t.ttl + lock_delay) << '\n';
    exit_now(exit_code_of(ended.status));
  }
  if (*released == ReleaseOutcome::kNotHeld) {
    std::cerr << "dblock: lost the lock " << opts.key << " before " << cmd
              << " finished (another holder may have run at the same time); exiting 75\n";
    return kExitTempFail;
  }
  return exit_code_of(ended.status);
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
  sub->add_option("--stop-margin", opts->stop_margin,
                  "How long before the lease could expire unrenewed CMD gets SIGTERM "
                  "(default: a third of --ttl)")
      ->type_name("DURATION");
  sub->add_option("--kill-after", opts->kill_after,
                  "How long after SIGTERM CMD's remaining processes get SIGKILL (default: half "
                  "of --stop-margin)")
      ->type_name("DURATION");
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
  sub->add_flag("--no-cgroup", opts->no_cgroup,
                "Do not give CMD a cgroup of its own even where possible: its processes are "
                "then found by process group and as orphans re-parented to dblock");
  opts->db.add_to(*sub);
  sub->add_option("CMD", opts->command, "The command to run and its arguments, after `--`")
      ->required();
  sub->footer(kRunFooter);
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return run(*opts); }); });
}

}  // namespace dblock::cli
