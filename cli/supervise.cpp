// SPDX-License-Identifier: Apache-2.0
#include "supervise.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <utility>

#include "dblock/error.hpp"
#include "duration.hpp"

extern char** environ;

namespace dblock::cli {

namespace {

using Clock = SupervisorClock;
using std::chrono::milliseconds;

int milliseconds_until(Clock::time_point when, Clock::time_point now) {
  auto ms = std::chrono::ceil<milliseconds>(when - now).count();
  return static_cast<int>(std::clamp<decltype(ms)>(ms, 0, 250));
}

bool is_stop_signal(int sig) {
  return std::find(std::begin(kForwardedSignals), std::end(kForwardedSignals), sig) !=
         std::end(kForwardedSignals);
}

}  // namespace

void CommandOptions::add_to(CLI::App& app) {
  app.add_option("--stop-margin", stop_margin,
                 "How long before the lease could expire unrenewed CMD gets SIGTERM "
                 "(default: a third of --ttl)")
      ->type_name("DURATION");
  app.add_option("--kill-after", kill_after,
                 "How long after SIGTERM CMD's remaining processes get SIGKILL (default: half "
                 "of --stop-margin)")
      ->type_name("DURATION");
  app.add_flag("--no-cgroup", no_cgroup,
               "Do not give CMD a cgroup of its own even where possible: its processes are "
               "then found by process group and as orphans re-parented to dblock");
  app.add_option("CMD", command, "The command to run and its arguments, after `--`")->required();
}

Timeline timeline_of(const std::string& ttl, const CommandOptions& options, milliseconds min_ttl) {
  const std::optional<std::string>& stop_margin = options.stop_margin;
  const std::optional<std::string>& kill_after = options.kill_after;
  Timeline t;
  t.ttl = parse_duration_option(ttl, "--ttl");
  if (t.ttl < min_ttl || t.ttl > std::chrono::hours(24 * 365)) {
    throw Error(ErrorCode::kInvalidArgument, "--ttl must be from " + format_duration(min_ttl) +
                                                 " to 365 days; got " + format_duration(t.ttl));
  }
  t.stop_margin = stop_margin ? parse_duration_option(*stop_margin, "--stop-margin") : t.ttl / 3;
  t.kill_after =
      kill_after ? parse_duration_option(*kill_after, "--kill-after") : t.stop_margin / 2;
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

Ended supervise(Job& job, const Timeline& t, const LeaseWatch& watch, const std::string& command,
                SignalInbox& inbox, Wakeup& wakeup) {
  enum class Stopping { kNo, kLeftovers, kLost };
  Stopping stopping = Stopping::kNo;
  Clock::time_point kill_at = Clock::time_point::max();
  std::optional<int> stop_signal;
  // SIGKILL is due kill_after past the SIGTERM deadline (none when the watch has none).
  const auto kill_by = [&t](Clock::time_point term_at) {
    return term_at == Clock::time_point::max() ? term_at : term_at + t.kill_after;
  };
  for (;;) {
    std::optional<int> status = job.reap();
    const Clock::time_point now = Clock::now();
    const Clock::time_point term_at = watch.term_at();
    if (stopping != Stopping::kLost) {
      std::optional<std::string> why = watch.lost();
      if (!why && now >= term_at) {
        why = "not renewed for " + format_duration(t.ttl - t.stop_margin);
      }
      if (why) {
        std::cerr << "dblock: lost " << watch.what << " while " << command << " was running ("
                  << *why << "); sent its processes SIGTERM, SIGKILL follows after "
                  << format_duration(t.kill_after) << "; " << watch.then << '\n';
        stopping = Stopping::kLost;
        job.signal_all(SIGTERM);
        kill_at = std::min({kill_at, now + t.kill_after, kill_by(term_at)});
      }
    }
    if (status && stopping == Stopping::kNo) {
      if (!job.anything_left()) return {*status, false, stop_signal};
      std::cerr << "dblock: " << command << " exited but left processes running; "
                << "stopping them before releasing " << watch.what << '\n';
      stopping = Stopping::kLeftovers;
      job.signal_all(SIGTERM);
      kill_at = std::min(now + t.kill_after, kill_by(term_at));
    }
    if (stopping != Stopping::kNo && now >= kill_at) job.signal_all(SIGKILL);
    if (status && stopping != Stopping::kNo && !job.anything_left()) {
      return {*status, stopping == Stopping::kLost, stop_signal};
    }
    // Wake for the next deadline, and at least every 250 ms: a child's exit is also found by
    // polling, whatever happens to SIGCHLD.
    int timeout = milliseconds_until(std::min(term_at, kill_at), now);
    if (now >= kill_at) timeout = 10;  // re-parented orphans keep arriving
    wait_readable(inbox.fd(), wakeup.fd(), timeout);
    wakeup.drain();
    while (auto sig = inbox.next()) {
      if (*sig == SIGCHLD) continue;  // reaped above
      if (!stop_signal && is_stop_signal(*sig)) stop_signal = *sig;
      // Also a terminal's Ctrl-C: the command's processes are not in the terminal's foreground
      // group.
      job.signal_all(*sig);
    }
  }
}

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

void wait_readable(int a, int b, int timeout_ms) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  while (::poll(fds, 2, timeout_ms) < 0) {
    if (errno != EINTR) throw_system_error("poll");
  }
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void exit_now(int code) {
  std::cout.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace dblock::cli
