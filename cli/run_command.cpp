#include "run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <future>
#include <iostream>
#include <memory>
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

namespace dblock::cli {

namespace {

constexpr int kExitCannotExecute = 126;  // as a shell reports a command it cannot execute
constexpr int kExitNotFound = 127;       // as a shell reports a command it cannot find
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

constexpr const char* kRunFooter =
    R"(Runs CMD while holding the lock KEY and renews the lease in the background (every third of
--ttl), so the lock lasts exactly as long as CMD runs. Put CMD after `--`; it is found on PATH.

Exit status:
  CMD's own: its exit code, or 128+N when signal N killed it.
  75   the lock is held elsewhere (still, after --wait): CMD was not run; one line on stderr,
       nothing else, so cron stays quiet.
  75   the lease was lost while CMD ran (the database was unreachable for a whole --ttl, or the
       lock row was removed): dblock sends CMD SIGTERM at once, so the job never keeps running
       in two places, waits for it to exit and exits 75 whatever CMD returned.
  126  CMD is not executable; 127: CMD was not found (the lock is released; CMD never ran).
  64 bad option, 69 database unreachable, 77 access denied, 78 tables missing.

The lock is released as soon as CMD exits, however it exits (exit, crash, signal).
SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to dblock are passed on to CMD. Ctrl-C and Ctrl-\ at a
terminal already reach CMD directly, so they are not sent twice. While dblock is still waiting
for the lock, these signals stop it (exit 128+N) without running CMD. If dblock itself is killed
(kill -9), CMD receives SIGTERM.

Durations: a whole number with ms, s, m or h (500ms, 30s, 5m, 1h), or 0.)";

struct RunOptions {
  DatabaseOptions db;
  std::string key;
  std::string ttl = "30s";
  std::string wait = "0";
  std::optional<std::string> owner;
  std::vector<std::string> command;
};

[[noreturn]] void throw_errno(const std::string& what, int err = errno) {
  throw Error(ErrorCode::kOther, what + " failed: " + std::strerror(err));
}

std::chrono::milliseconds parse_duration_option(const std::string& text, const char* option) {
  try {
    return parse_duration(text);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
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

// A file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe any thread may write a byte to, to wake the main thread's poll().
class Wakeup {
 public:
  Wakeup() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("pipe2");
    read_.reset(fds[0]);
    write_.reset(fds[1]);
  }
  int fd() const noexcept { return read_.get(); }
  void notify() noexcept {
    char byte = 1;
    ssize_t n = ::write(write_.get(), &byte, 1);  // a full pipe already holds a wake-up
    (void)n;
  }
  void drain() noexcept {
    char buf[64];
    while (::read(read_.get(), buf, sizeof buf) > 0) {
    }
  }

 private:
  Fd read_;
  Fd write_;
};

// What other threads tell the main thread: the lease was lost (from on_lost, on the library's
// renewer thread), or the acquiring thread finished. Shared, because the renewer may still hold
// the callback for a moment after the lease is released.
struct Events {
  Wakeup wakeup;
  std::atomic<bool> lost{false};
};

// The forwarded signals and SIGCHLD, blocked in this thread and in every thread started after it
// (so the library's threads never take them) and read from a signalfd instead. The mask stays
// blocked to the end: `run` is the last thing the process does, and a signal arriving after CMD
// has exited must not change the exit status.
class SignalInbox {
 public:
  SignalInbox() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kForwardedSignals) sigaddset(&set, sig);
    sigaddset(&set, SIGCHLD);
    if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, &original_); rc != 0) {
      throw_errno("pthread_sigmask", rc);
    }
    fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (fd_.get() < 0) throw_errno("signalfd");
  }
  int fd() const noexcept { return fd_.get(); }
  // The mask dblock started with, for CMD to start with.
  const sigset_t& original_mask() const noexcept { return original_; }

  // The next signal received, if any.
  std::optional<signalfd_siginfo> next() {
    signalfd_siginfo info;
    if (::read(fd_.get(), &info, sizeof info) != sizeof info) return std::nullopt;
    return info;
  }
  // The first forwarded signal received (SIGCHLD is skipped), if any.
  std::optional<int> next_stop_signal() {
    while (auto info = next()) {
      if (info->ssi_signo != SIGCHLD) return static_cast<int>(info->ssi_signo);
    }
    return std::nullopt;
  }

 private:
  sigset_t original_;
  Fd fd_;
};

// Sleeps until one of the two descriptors is readable.
void wait_readable(int a, int b) {
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0) {
    if (errno != EINTR) throw_errno("poll");
  }
}

// Waits up to `wait` for the lock. With a wait, the acquire runs on a second thread so that a
// signal can end the wait at once: dblock then exits 128+N at once, without unwinding (that
// thread still uses the pool); a lease it may just have taken expires by its TTL.
std::optional<Lease> acquire(UniqueKeyLock& lock, const RunOptions& opts,
                             std::chrono::milliseconds wait, const LockOptions& options,
                             SignalInbox& inbox, Events& events) {
  if (wait == std::chrono::milliseconds(0)) return lock.try_acquire(opts.key, options);
  std::promise<std::optional<Lease>> promise;
  std::future<std::optional<Lease>> result = promise.get_future();
  std::thread worker([&] {
    try {
      promise.set_value(lock.acquire(opts.key, wait, options));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
    events.wakeup.notify();
  });
  for (;;) {
    wait_readable(inbox.fd(), events.wakeup.fd());
    if (auto sig = inbox.next_stop_signal()) {
      std::cerr << "dblock: stopped by " << signal_name(*sig) << " while waiting for lock "
                << opts.key << "; not running " << opts.command[0] << '\n';
      ::_exit(128 + *sig);
    }
    events.wakeup.drain();
    if (result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      worker.join();
      return result.get();
    }
  }
}

struct Started {
  pid_t pid = -1;
  int exec_errno = 0;  // when exec failed (the child has been reaped)
};

// Forks and execs `command` (execvp: PATH lookup) with dblock's original signal mask. An exec
// failure comes back through a close-on-exec pipe as the child's errno.
Started start(const std::vector<std::string>& command, const sigset_t& mask) {
  std::vector<char*> argv;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd read_end, write_end;
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    // Only async-signal-safe calls until exec: other threads may have held locks at the fork.
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    // If dblock dies without releasing (kill -9), stop CMD: its lease will expire.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(kExitFailure);
    ::execvp(argv[0], argv.data());
    int err = errno;
    ssize_t n = ::write(fds[1], &err, sizeof err);
    (void)n;
    ::_exit(kExitNotFound);
  }
  write_end.reset();
  int err = 0;
  ssize_t n;
  do {
    n = ::read(read_end.get(), &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof err)) return {pid, 0};  // closed by a successful exec
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {-1, err};
}

// Waits for the child to exit, passing signals on, and stops it with SIGTERM if the lease is
// lost. Returns the child's wait status; sets `*stopped_for_lost` when it had to stop it.
int supervise(pid_t pid, const RunOptions& opts, SignalInbox& inbox, Events& events,
              bool* stopped_for_lost) {
  for (;;) {
    if (events.lost && !*stopped_for_lost) {
      *stopped_for_lost = true;
      std::cerr << "dblock: lost the lock " << opts.key << " while " << opts.command[0]
                << " was running; sent it SIGTERM and will exit 75 once it has stopped\n";
      ::kill(pid, SIGTERM);
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    wait_readable(inbox.fd(), events.wakeup.fd());
    events.wakeup.drain();
    while (auto info = inbox.next()) {
      if (info->ssi_signo == SIGCHLD) continue;  // reaped by waitpid above
      // The terminal sends Ctrl-C and Ctrl-\ to the whole foreground process group, CMD too.
      if (info->ssi_code == SI_KERNEL) continue;
      ::kill(pid, static_cast<int>(info->ssi_signo));
    }
  }
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Releases the lease. Returns false when it turned out lost (someone else may have held the key
// meanwhile). A fault is reported and otherwise ignored: the lease then expires by its TTL.
bool release(Lease& lease, const RunOptions& opts, std::chrono::milliseconds ttl) {
  try {
    return lease.release() != ReleaseOutcome::kNotHeld;
  } catch (const Error& e) {
    std::cerr << "dblock: could not release the lock " << opts.key << " (" << e.what()
              << "); it expires within " << format_duration(ttl) << '\n';
    return true;
  }
}

int run(const RunOptions& opts) {
  const auto ttl = parse_duration_option(opts.ttl, "--ttl");
  const auto wait = parse_duration_option(opts.wait, "--wait");
  const std::string& cmd = opts.command.front();

  SignalInbox inbox;  // before any thread starts, so every thread inherits the mask
  auto events = std::make_shared<Events>();
  LockOptions options;
  options.ttl = ttl;
  if (opts.owner) options.owner = Owner::named(*opts.owner);
  options.metadata = nlohmann::json::object({{"command", cmd}});
  options.auto_renew = true;
  options.on_lost = [events](const std::string&) {
    events->lost = true;
    events->wakeup.notify();
  };

  std::unique_ptr<Pool> pool = open_pool(opts.db.resolve_url(), {.max_size = 2});
  UniqueKeyLockOptions lock_options;
  lock_options.tables = opts.db.table_names();
  UniqueKeyLock lock(*pool, lock_options);
  std::optional<Lease> lease = acquire(lock, opts, wait, options, inbox, *events);
  if (!lease) {
    std::cerr << "dblock: lock " << opts.key << " is held by someone else"
              << (wait.count() > 0 ? " (waited " + format_duration(wait) + ")" : "")
              << "; not running " << cmd << '\n';
    return kExitTempFail;
  }
  if (auto sig = inbox.next_stop_signal()) {  // arrived while trying: do not start CMD
    release(*lease, opts, ttl);
    std::cerr << "dblock: stopped by " << signal_name(*sig) << " before " << cmd
              << " started; not running it\n";
    return 128 + *sig;
  }

  Started child = start(opts.command, inbox.original_mask());
  if (child.pid < 0) {
    release(*lease, opts, ttl);
    std::cerr << "dblock: cannot run " << cmd << ": " << std::strerror(child.exec_errno) << '\n';
    return child.exec_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  bool stopped_for_lost = false;
  const int status = supervise(child.pid, opts, inbox, *events, &stopped_for_lost);
  const bool held_to_the_end = release(*lease, opts, ttl);
  if (stopped_for_lost) return kExitTempFail;
  if (!held_to_the_end) {
    std::cerr << "dblock: lost the lock " << opts.key << " before " << cmd
              << " finished (another holder may have run at the same time); exiting 75\n";
    return kExitTempFail;
  }
  return exit_code_of(status);
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
                  "Lease length; renewed every third of it while CMD runs, so it bounds how long "
                  "the lock outlives a dblock that was killed")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--wait", opts->wait, "How long to wait for a lock held elsewhere; 0: try once")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_option("--owner", opts->owner,
                  "A name for this holder, shown by `dblock locks` (default: the thread id)")
      ->type_name("NAME");
  opts->db.add_to(*sub);
  sub->add_option("CMD", opts->command, "The command to run and its arguments, after `--`")
      ->required();
  sub->footer(kRunFooter);
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return run(*opts); }); });
}

}  // namespace dblock::cli
