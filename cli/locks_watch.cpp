// SPDX-License-Identifier: Apache-2.0
#include "locks_watch.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "dblock/error.hpp"
#include "duration.hpp"
#include "locks_view.hpp"
#include "signal_inbox.hpp"

namespace dblock::cli {

namespace {

// How long a stop signal waits for a refresh under way before the process exits regardless.
constexpr int kStopGraceMs = 1000;

// Writes all of `data` to `fd`; false (errno set) when it cannot.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The local clock now, as the database times are written: "2026-11-27T12:00:00.123000Z".
std::string local_utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1'000'000;
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lldZ", static_cast<long long>(micros));
  return buf;
}

// "2026-11-27T12:00:00.123456Z" -> "2026-11-27 12:00:00.123 UTC"; anything else unchanged.
std::string readable_time(const std::string& time) {
  const auto shortened = shortened_time(time, 23);
  return shortened ? *shortened + " UTC" : time;
}

// The refreshes, on a thread of their own.
class Refresher {
 public:
  Refresher(const WatchSettings& settings, std::string url)
      : settings_(settings),
        tables_(settings.db.table_names()),
        url_(std::move(url)),
        terminal_(!settings.json && ::isatty(STDOUT_FILENO) == 1) {}

  bool terminal() const noexcept { return terminal_; }
  // errno of the write to standard output that failed; 0 when none did.
  int write_error() const noexcept { return write_error_; }

  // Refreshes every interval until stop(), or until standard output cannot be written.
  void run() {
    const auto interval = settings_.interval;
    std::unique_ptr<Connection> conn;
    std::string last_good;
    bool first = true;
    for (;;) {
      const auto started = std::chrono::steady_clock::now();
      std::string out = refresh(conn, last_good);
      if (terminal_) {
        winsize ws{};
        const bool sized = ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0;
        // Home, the frame over the previous one line by line, then the rest of the screen
        // cleared: the screen is never blank in between, so nothing flickers.
        out = std::string(first ? "\x1b[H\x1b[2J" : "\x1b[H") +
              fit_to_terminal(out, sized ? ws.ws_col : 0, sized ? ws.ws_row : 0) + "\x1b[J";
      } else if (!settings_.json && !first) {
        out = "\n" + out;
      }
      first = false;
      if (!write_all(STDOUT_FILENO, out)) {
        write_error_ = errno;
        return;
      }
      auto next = started + interval;
      if (const auto now = std::chrono::steady_clock::now(); next <= now) next = now + interval;
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::string header(const std::string& time, const char* clock) const {
    std::string h = readable_time(time) + " (" + clock + ")   every " +
                    format_duration(settings_.interval) + "   " + url_;
    if (settings_.key_prefix) h += "   keys starting with " + printable(*settings_.key_prefix);
    return h;
  }

  // One frame, or the error of the refresh that failed (and `conn` closed: the next refresh
  // opens a new connection, so a lost one is never used again nor left open).
  std::string refresh(std::unique_ptr<Connection>& conn, std::string& last_good) {
    const auto interval_ms = static_cast<std::int64_t>(settings_.interval.count());
    try {
      if (!conn) conn = settings_.db.connect();
      const LockTableView view = read_lock_table(*conn, tables_, settings_.key_prefix.value_or(""));
      last_good = readable_time(view.now);
      if (settings_.json) {
        return frame_json(view, url_, interval_ms, settings_.key_prefix)
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
      }
      return render_frame(view, header(view.now, "database clock"));
    } catch (const std::exception& e) {
      conn.reset();
      const std::string now = local_utc_now();
      if (settings_.json) {
        return error_json(now, e.what(), url_, interval_ms, settings_.key_prefix)
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
      }
      return render_error_frame(header(now, "local clock"), e.what(), last_good);
    }
  }

  const WatchSettings& settings_;
  const TableNames tables_;
  const std::string url_;
  const bool terminal_;
  int write_error_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace

std::chrono::milliseconds watch_interval(const std::string& text) {
  const std::chrono::milliseconds interval = parse_duration_option(text, "--interval");
  if (interval < kMinWatchInterval || interval > kMaxWatchInterval) {
    throw Error(ErrorCode::kInvalidArgument,
                "--interval " + text + " is out of range: give " +
                    format_duration(kMinWatchInterval) + " to " +
                    format_duration(kMaxWatchInterval) +
                    " (each refresh sends four queries; a shorter interval only loads the "
                    "database)");
  }
  return interval;
}

int watch_locks(const WatchSettings& settings) {
  // A URL that does not parse is refused before anything is drawn; a database that does not
  // answer is shown in the view.
  const std::string url = settings.db.resolve_url().redacted();
  SignalInbox inbox;  // before the thread starts, so that it inherits the blocked signals
  Wakeup ended;
  Refresher refresher(settings, url);
  std::thread worker([&] {
    refresher.run();
    ended.notify();
  });
  bool stopped = false;
  pollfd fds[2] = {{inbox.fd(), POLLIN, 0}, {ended.fd(), POLLIN, 0}};
  while (!stopped) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      stopped = true;  // cannot wait for a signal: stop as if one came
      break;
    }
    if (inbox.next_stop_signal()) stopped = true;
    if ((fds[1].revents & POLLIN) != 0) break;  // the output is gone
  }
  if (stopped) {
    refresher.stop();
    pollfd done{ended.fd(), POLLIN, 0};
    if (::poll(&done, 1, kStopGraceMs) <= 0) {
      // The refresh waits on the database: leave it; the kernel closes its connection.
      if (refresher.terminal()) write_all(STDOUT_FILENO, "\n");
      std::_Exit(kExitOk);
    }
  }
  worker.join();
  if (refresher.terminal()) write_all(STDOUT_FILENO, "\n");
  if (refresher.write_error() != 0) {
    throw Error(ErrorCode::kOther, std::string("cannot write the view to standard output: ") +
                                       std::strerror(refresher.write_error()));
  }
  return kExitOk;
}

}  // namespace dblock::cli
