// SPDX-License-Identifier: Apache-2.0
// What `dblock run` and `dblock lead` share: the stop timeline of a command that runs under a
// lease, and the loop that supervises it (signals passed on, its processes stopped before the
// lease can expire, leftovers stopped before the lease is given back).
//
//   Timeline t = timeline_of(ttl, stop_margin, kill_after);   // validated: kill < margin < ttl
//   Job job(command, environment_for(lease), true);
//   Ended ended = supervise(job, t, watch, command[0], inbox, wakeup);
//
// Thread-safety: supervise() runs on the thread that owns the Job and reads the SignalInbox;
// a LeaseWatch's functions are called on that thread.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dblock/lock.hpp"
#include "job.hpp"
#include "signal_inbox.hpp"

namespace dblock::cli {

using SupervisorClock = std::chrono::steady_clock;

inline constexpr int kExitCannotExecute = 126;  // as a shell reports a command it cannot execute
inline constexpr int kExitNotFound = 127;       // as a shell reports a command it cannot find

// The durations a supervised command's stop timeline is made of (`dblock run --help`).
struct Timeline {
  std::chrono::milliseconds ttl;
  std::chrono::milliseconds stop_margin;  // SIGTERM this long before the lease could expire
  std::chrono::milliseconds kill_after;   // SIGKILL this long after SIGTERM
  std::chrono::milliseconds renew_every;  // a third of ttl - stop_margin
};

// The options `run` and `lead` share: the command (CMD, after `--`), where its processes are
// looked for, and its stop timeline but the TTL.
struct CommandOptions {
  std::optional<std::string> stop_margin;
  std::optional<std::string> kill_after;
  bool no_cgroup = false;
  std::vector<std::string> command;

  // Adds --stop-margin, --kill-after, --no-cgroup and CMD to a subcommand.
  void add_to(CLI::App& app);
};

// Parses --ttl, --stop-margin (default: a third of the TTL) and --kill-after (default: half the
// margin), and checks kill-after < stop-margin < ttl, and the TTL within [min_ttl, 365 days].
// Throws dblock::Error(kInvalidArgument) saying which option to change.
Timeline timeline_of(const std::string& ttl, const CommandOptions& options,
                     std::chrono::milliseconds min_ttl = std::chrono::milliseconds(1));

// The lease a supervised command runs under, as the supervisor sees it.
struct LeaseWatch {
  // What is held, for messages: "the lock K", "the leadership of K (term 7)".
  std::string what;
  // What dblock does once the command's processes are stopped after a loss: "exiting 75".
  std::string then;
  // When the command's processes get SIGTERM unless the lease is renewed before.
  std::function<SupervisorClock::time_point()> term_at;
  // Why the lease is known lost or about to be ("its lease is gone"), or nothing while it holds.
  std::function<std::optional<std::string>()> lost;
};

struct Ended {
  int status = 0;     // the command's wait status
  bool lost = false;  // its processes were stopped because the lease was (about to be) lost
  std::optional<int> stop_signal;  // the first SIGINT/SIGTERM/SIGHUP/SIGQUIT passed on to it
};

// Waits until the command has exited and none of its processes is left, passing the forwarded
// signals on, and stops them (SIGTERM, SIGKILL after kill_after) when the lease is lost or at
// watch.term_at(), or when the command exits leaving some behind. `command` names it in
// messages. Returns early never: the processes are gone when it returns.
Ended supervise(Job& job, const Timeline& t, const LeaseWatch& watch, const std::string& command,
                SignalInbox& inbox, Wakeup& wakeup);

// dblock's environment with the lease's facts added (replacing any of the same name):
// DBLOCK_KEY, DBLOCK_FENCING_TOKEN, DBLOCK_LEASE_ID, DBLOCK_OWNER.
std::vector<std::string> environment_for(const Lease& lease);

// "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT" or "a signal".
const char* signal_name(int sig);

// Sleeps until one of the two descriptors is readable or `timeout_ms` passes (-1: no limit).
void wait_readable(int a, int b, int timeout_ms = -1);

// A wait status as a shell reports it: the exit code, or 128+N when signal N ended it.
int exit_code_of(int status);

// Ends the process now, flushing stdio: a renewal may still be stuck on a connection that
// stopped answering, and nothing that thread uses may be destroyed under it.
[[noreturn]] void exit_now(int code);

}  // namespace dblock::cli
