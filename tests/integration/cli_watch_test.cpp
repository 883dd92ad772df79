// SPDX-License-Identifier: Apache-2.0
// `dblock locks --watch` as an operator leaves it running: later frames show a lock taken, a
// fair waiter queued behind it and both gone again; a stop signal ends it at once with exit 0,
// also while a refresh waits on a database that stopped answering; --json prints one object per
// line and refresh, an interval apart; a database that goes away shows its error in the view,
// and the next intervals try again on one new connection each, without exiting or leaking one.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli_fixture.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "dblock/url.hpp"
#include "fault_proxy.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

// The frames of a watch's text output: each opens with its header line, which names the clock
// its time was read from.
std::vector<std::string> frames_of(const std::string& out) {
  std::vector<std::string> frames;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const bool header = line.find(" (database clock)   every ") != std::string::npos ||
                        line.find(" (local clock)   every ") != std::string::npos;
    if (header) frames.emplace_back();
    if (!frames.empty()) frames.back() += line + "\n";
  }
  return frames;
}

// The sockets a process has open.
int sockets_of(pid_t pid) {
  int n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

// Seconds since the Unix epoch of a time as the view writes it ("2026-11-27T12:00:00.123456Z").
double utc_seconds(const std::string& time) {
  std::tm tm{};
  double seconds = 0;
  EXPECT_EQ(std::sscanf(time.c_str(), "%4d-%2d-%2dT%2d:%2d:%lfZ", &tm.tm_year, &tm.tm_mon,
                        &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &seconds),
            6)
      << time;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm)) + seconds;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class CliWatchTest : public CliFixture {
 protected:
  std::vector<std::string> watch(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"--watch", "--interval", "100ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return cli("locks", args);
  }
  // Waits up to `timeout` for a frame after the first `after` that satisfies `wanted`; returns
  // its index, or nullopt.
  static std::optional<std::size_t> wait_for_frame(
      const ChildProcess& watcher, std::size_t after,
      const std::function<bool(const std::string&)>& wanted,
      std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto frames = frames_of(watcher.output_so_far());
      // The last frame may still be being written: look at the complete ones.
      for (std::size_t i = after; i + 1 < frames.size(); ++i) {
        if (wanted(frames[i])) return i;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(20ms);
    }
  }
  // The line of `frame` that mentions `text`, or "".
  static std::string line_with(const std::string& frame, const std::string& text) {
    std::istringstream in(frame);
    for (std::string line; std::getline(in, line);) {
      if (line.find(text) != std::string::npos) return line;
    }
    return "";
  }
  // Ends the watch with `sig`, expecting exit 0 within `bound`; returns what it printed.
  static ProcessResult stop(ChildProcess& watcher, int sig, std::chrono::milliseconds bound = 2s) {
    const auto at = std::chrono::steady_clock::now();
    watcher.signal(sig);
    ProcessResult r = watcher.wait();
    EXPECT_LT(std::chrono::steady_clock::now() - at, bound);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }
  // url_ with its host and port replaced by `host_port`.
  std::string url_at(const std::string& host_port) const {
    const auto at = url_.find('@');
    const auto slash = url_.find('/', at);
    return url_.substr(0, at + 1) + host_port + url_.substr(slash);
  }
  std::unique_ptr<UniqueKeyLock> fair_lock(ConnectionSource& pool) const {
    UniqueKeyLockOptions options;
    options.tables = TableNames(prefix_);
    options.fair = true;
    return std::make_unique<UniqueKeyLock>(pool, options);
  }
  static LockOptions as(const std::string& name) {
    LockOptions o;
    o.owner = Owner::named(name);
    o.ttl = 30s;
    return o;
  }
};

TEST_P(CliWatchTest, LaterFramesShowALockItsFairWaiterAndThenNeither) {
  auto pool = open_pool(backend().url(), {.max_size = 4});
  auto holder_lock = fair_lock(*pool);
  auto waiter_lock = fair_lock(*pool);
  auto watcher = start(watch());

  auto empty = wait_for_frame(*watcher, 0, [](const std::string& f) {
    return f.find("no locks held") != std::string::npos;
  });
  ASSERT_TRUE(empty) << watcher->output_so_far();

  auto held = holder_lock->try_acquire(key_, as("watch-holder"));
  ASSERT_TRUE(held);
  const std::string token = std::to_string(held->fencing_token());
  auto shown = wait_for_frame(*watcher, *empty + 1, [&](const std::string& f) {
    return line_with(f, key_).find("watch-holder") != std::string::npos;
  });
  ASSERT_TRUE(shown) << watcher->output_so_far();
  const std::string frame = frames_of(watcher->output_so_far())[*shown];
  const std::string line = line_with(frame, key_);
  EXPECT_EQ(line.rfind("lock ", 0), 0u) << line;
  EXPECT_NE(line.find(held->owner().to_string()), std::string::npos) << line;
  EXPECT_NE(line.find(" " + token + " "), std::string::npos) << line;
  EXPECT_NE(line.find(" held "), std::string::npos) << line;
  EXPECT_NE(frame.find("HELD  "), std::string::npos) << frame;
  EXPECT_NE(frame.find("EXPIRES IN"), std::string::npos) << frame;
  EXPECT_EQ(frame.find("QUEUED FOR"), std::string::npos) << "no one waits yet\n" << frame;

  // A fair waiter queues behind the holder: the view names it as the head of the key's queue.
  std::optional<Lease> second;
  std::thread waiter([&] { second = waiter_lock->acquire(key_, 20s, as("watch-waiter")); });
  auto queued = wait_for_frame(*watcher, *shown + 1, [&](const std::string& f) {
    return line_with(f, "name:watch-waiter").find(key_) != std::string::npos;
  });
  const std::string queued_frame =
      queued ? frames_of(watcher->output_so_far())[*queued] : std::string();
  EXPECT_TRUE(queued) << watcher->output_so_far();
  EXPECT_NE(queued_frame.find("QUEUED FOR"), std::string::npos) << queued_frame;
  // The lock's line counts its waiter.
  EXPECT_TRUE(line_with(queued_frame, "watch-holder").ends_with(" 1")) << queued_frame;

  held->release();
  waiter.join();
  ASSERT_TRUE(second);
  auto handed = wait_for_frame(*watcher, queued.value_or(*shown) + 1, [&](const std::string& f) {
    return line_with(f, key_).find("watch-waiter") != std::string::npos &&
           f.find("QUEUED FOR") == std::string::npos;
  });
  EXPECT_TRUE(handed) << watcher->output_so_far();
  second->release();
  auto gone = wait_for_frame(*watcher, handed.value_or(*shown) + 1, [&](const std::string& f) {
    return f.find("no locks held") != std::string::npos;
  });
  EXPECT_TRUE(gone) << watcher->output_so_far();

  const ProcessResult r = stop(*watcher, SIGINT);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "escape sequences into a file";
  // Frames a blank line apart.
  const auto frames = frames_of(r.out);
  ASSERT_GE(frames.size(), 5u);
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    EXPECT_TRUE(frames[i].ends_with("\n\n")) << frames[i];
  }
  EXPECT_EQ(r.err, "");
}

TEST_P(CliWatchTest, JsonPrintsOneObjectPerLineAndRefreshAnIntervalApart) {
  auto pool = open_pool(backend().url(), {.max_size = 2});
  auto lock = fair_lock(*pool);
  auto held = lock->try_acquire(key_, as("json-holder"));
  ASSERT_TRUE(held);
  auto watcher = start(watch({"--json"}));
  ASSERT_TRUE(watcher->wait_for_output("\n", 10s));
  std::this_thread::sleep_for(1s);
  const ProcessResult r = stop(*watcher, SIGTERM);

  std::istringstream in(r.out);
  std::vector<nlohmann::json> docs;
  for (std::string line; std::getline(in, line);) {
    auto doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << line;
    docs.push_back(std::move(doc));
  }
  // About ten in a second at 100 ms: no fewer than three, and no spinning.
  EXPECT_GE(docs.size(), 3u) << r.out;
  EXPECT_LE(docs.size(), 15u) << r.out;
  // The time is UTC whatever the session's time zone (the test's servers share this host's
  // clock), and the lease's time left on that clock is within its TTL.
  ASSERT_FALSE(docs.empty());
  const double first = utc_seconds(docs.front().at("time"));
  EXPECT_NEAR(first, now_seconds(), 60) << docs.front();
  const double left = utc_seconds(docs.front().at("locks").at(0).at("expires_at")) - first;
  EXPECT_GT(left, 25) << docs.front();
  EXPECT_LE(left, 30) << docs.front();
  std::string previous;
  for (const auto& doc : docs) {
    EXPECT_TRUE(doc.at("error").is_null()) << doc;
    EXPECT_EQ(doc.at("clock"), "database");
    EXPECT_EQ(doc.at("interval_ms"), 100);
    ASSERT_EQ(doc.at("locks").size(), 1u) << doc;
    const auto& entry = doc.at("locks").at(0);
    EXPECT_EQ(entry.at("key"), key_);
    EXPECT_EQ(entry.at("kind"), "lock");
    EXPECT_EQ(entry.at("fencing_token").get<std::int64_t>(), held->fencing_token());
    EXPECT_EQ(entry.at("owner_thread"), "name:json-holder");
    EXPECT_TRUE(doc.at("waiter_queues").empty());
    // The database clock moves on between refreshes (ISO 8601 strings compare as times).
    const std::string time = doc.at("time");
    EXPECT_GT(time, previous);
    previous = time;
  }
}

TEST_P(CliWatchTest, ADatabaseNoOneListensForShowsItsErrorAndTheWatchGoesOn) {
  const std::string password = DatabaseUrl::parse(url_).password;
  auto watcher = std::make_unique<ChildProcess>(watch(), env(url_at("127.0.0.1:1")));
  auto failed = wait_for_frame(
      *watcher, 0, [](const std::string& f) { return f.find("\nerror: ") != std::string::npos; });
  ASSERT_TRUE(failed) << watcher->output_so_far();
  // More refreshes come, each failing: it neither exits nor stops trying.
  auto again = wait_for_frame(*watcher, *failed + 3, [](const std::string& f) {
    return f.find("\nerror: ") != std::string::npos;
  });
  EXPECT_TRUE(again) << watcher->output_so_far();
  EXPECT_LE(sockets_of(watcher->pid()), 1);
  const ProcessResult r = stop(*watcher, SIGHUP);
  const std::string frame = frames_of(r.out).at(*failed);
  EXPECT_NE(frame.find("(local clock)"), std::string::npos) << frame;
  EXPECT_NE(frame.find("last refreshed: never"), std::string::npos) << frame;
  if (!password.empty()) {
    EXPECT_EQ(r.out.find(password), std::string::npos);
  }
}

TEST_P(CliWatchTest, ALostConnectionIsShownAndReplacedByOneNewConnectionPerRefresh) {
  const DatabaseUrl direct = backend().url();
  FaultProxy proxy(direct.host, direct.port);
  auto pool = open_pool(direct, {.max_size = 2});
  auto lock = fair_lock(*pool);
  auto held = lock->try_acquire(key_, as("proxy-holder"));
  ASSERT_TRUE(held);
  // With a key prefix, every refresh sends the key as a parameter, where the proxy finds it
  // (a statement's text goes only once to a driver that prepares it).
  auto watcher = std::make_unique<ChildProcess>(
      watch({"--key-prefix", key_}), env(url_at("127.0.0.1:" + std::to_string(proxy.port()))));
  const auto shows_lock = [&](const std::string& f) {
    return line_with(f, "name:proxy-holder").find(key_) != std::string::npos;
  };
  auto first = wait_for_frame(*watcher, 0, shows_lock);
  ASSERT_TRUE(first) << watcher->output_so_far();
  EXPECT_EQ(proxy.accepted(), 1);

  // The next three refreshes lose their connection.
  proxy.drop_request_containing(key_, 3);
  auto failed = wait_for_frame(*watcher, *first + 1, [](const std::string& f) {
    return f.find("\nerror: ") != std::string::npos;
  });
  ASSERT_TRUE(failed) << watcher->output_so_far();
  auto back = wait_for_frame(*watcher, *failed + 1, shows_lock);
  ASSERT_TRUE(back) << watcher->output_so_far();
  const auto frames = frames_of(watcher->output_so_far());
  int error_frames = 0;
  for (std::size_t i = *first; i < *back; ++i) {
    if (frames[i].find("\nerror: ") != std::string::npos) ++error_frames;
  }
  EXPECT_EQ(error_frames, 3);
  EXPECT_NE(frames[*failed].find("last refreshed: "), std::string::npos);
  EXPECT_EQ(frames[*failed].find("last refreshed: never"), std::string::npos) << frames[*failed];
  // One connection per failed refresh and the first: none kept open beside the one in use.
  EXPECT_EQ(proxy.accepted(), 4);
  EXPECT_EQ(sockets_of(watcher->pid()), 1);

  // A refresh now waits on a database that does not answer: a signal still ends the watch.
  proxy.set_blackhole(true);
  std::this_thread::sleep_for(300ms);
  stop(*watcher, SIGINT);
}

INSTANTIATE_TEST_SUITE_P(Pairs, CliWatchTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
