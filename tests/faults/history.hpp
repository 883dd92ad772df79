// Lock histories and the mutual-exclusion checker over them.
//
// Every client in a fault scenario (a thread of the test or a worker process) appends what it
// did to a history file, one event per line, flushed at once so that a client killed with
// SIGKILL leaves everything up to its death behind:
//
//   acquired <client> <key> <token> <reply_us> <sent_us> <ttl_ms>
//   renewed  <client> <key> <token> <sent_us> <ttl_ms>
//   released <client> <key> <token> <sent_us> <outcome>
//
// Times are CLOCK_MONOTONIC microseconds (std::chrono::steady_clock), one clock for every
// process on the machine and untouched by faketime or wall-clock steps.
//
// A client holds a key from the reply of its acquire until the earlier of (a) sending its
// release and (b) one TTL after sending its latest successful acquire or renew: past (b) the
// database has expired the lease, and a careful client (Lease::lost()) stops using it. The
// checker reports, per key, every pair of holds whose intervals overlap and every acquisition
// whose fencing token is not above the token of the acquisition before it.
//
// Thread-safety: a HistoryWriter may be used from many threads; the rest are plain functions.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace dblock::testing {

// Now, in CLOCK_MONOTONIC microseconds.
std::int64_t monotonic_us();

class HistoryWriter {
 public:
  // Appends to `path` (created when missing).
  explicit HistoryWriter(const std::string& path);

  void acquired(const std::string& client, const std::string& key, std::int64_t token,
                std::int64_t reply_us, std::int64_t sent_us, std::int64_t ttl_ms);
  void renewed(const std::string& client, const std::string& key, std::int64_t token,
               std::int64_t sent_us, std::int64_t ttl_ms);
  // `outcome`: released, decremented, not_held, or error (the reply never came).
  void released(const std::string& client, const std::string& key, std::int64_t token,
                std::int64_t sent_us, const std::string& outcome);

 private:
  void line(const std::string& text);

  std::mutex mu_;
  std::ofstream out_;
};

// One acquisition and how long its client may have relied on it.
struct Hold {
  std::string client;
  std::string key;
  std::int64_t token = 0;
  std::int64_t from_us = 0;     // the acquire's reply
  std::int64_t until_us = 0;    // release sent, or latest acquire/renew sent + TTL
  std::string release_outcome;  // empty when no release was sent
};

// Reads history files into holds. Throws std::runtime_error on a malformed line.
std::vector<Hold> load_holds(const std::vector<std::string>& paths);

struct HistoryReport {
  std::size_t holds = 0;
  std::size_t keys = 0;
  std::vector<std::string> overlaps;          // one line per overlapping pair
  std::vector<std::string> token_inversions;  // one line per token not above its predecessor's

  bool clean() const { return overlaps.empty() && token_inversions.empty(); }
  // "holds=N keys=K overlaps=0 token_inversions=0" and the first few problems.
  std::string summary() const;
};

HistoryReport check_mutual_exclusion(const std::vector<Hold>& holds);

}  // namespace dblock::testing
